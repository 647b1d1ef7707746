package packet

import (
	"context"
	"time"

	"github.com/packethost/packngo"
)

func (c *client) ListProjectSSHKeys(ctx context.Context, projectID string) ([]SSHKey, error) {
	var keys []packngo.SSHKey
	err := c.do(ctx, "GET /projects/{id}/ssh-keys", func(api *packngo.Client) (resp *packngo.Response, err error) {
		keys, resp, err = api.SSHKeys.ProjectList(projectID)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]SSHKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, toSSHKey(&k))
	}
	return out, nil
}

func toSSHKey(k *packngo.SSHKey) SSHKey {
	out := SSHKey{ID: k.ID, Label: k.Label, Key: k.Key, Fingerprint: k.FingerPrint}
	if t, err := time.Parse(time.RFC3339, k.Created); err == nil {
		out.CreatedAt = t
	}
	return out
}

func (c *client) CreateProjectSSHKey(ctx context.Context, projectID, label, publicKey string) (*SSHKey, error) {
	var k *packngo.SSHKey
	err := c.do(ctx, "POST /projects/{id}/ssh-keys", func(api *packngo.Client) (resp *packngo.Response, err error) {
		k, resp, err = api.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: label, Key: publicKey, ProjectID: projectID})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := toSSHKey(k)
	return &out, nil
}

func (c *client) DeleteSSHKey(ctx context.Context, id string) error {
	err := c.do(ctx, "DELETE /ssh-keys/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.SSHKeys.Delete(id)
	})
	if IsNotFound(err) {
		return nil
	}
	return err
}
