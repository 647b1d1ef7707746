// Package sshkeys turns PacketMachine.spec.sshKeys into project SSH key IDs for a device.
package sshkeys

import (
	"context"
	"crypto/md5" //nolint:gosec // Packet identifies SSH keys by their MD5 fingerprint.
	"encoding/base64"
	"fmt"
	"strings"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Resolve returns the project SSH key IDs for entries: an entry that is a UUID is already a key
// ID; any other entry is a public key, looked up among the project's keys by fingerprint and
// registered under label when the project does not have it yet. The project's keys are listed
// only when there is a public key to match, and at most once.
func Resolve(ctx context.Context, c packet.Client, projectID, label string, entries []string) ([]string, error) {
	ids := make([]string, 0, len(entries))
	var existing []packet.SSHKey
	listed := false
	for _, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if infrav1.IsUUID(entry) {
			ids = append(ids, strings.ToLower(entry))
			continue
		}
		fp, err := Fingerprint(entry)
		if err != nil {
			return nil, err
		}
		if !listed {
			if existing, err = c.ListProjectSSHKeys(ctx, projectID); err != nil {
				return nil, err
			}
			listed = true
		}
		id := ""
		for _, k := range existing {
			if k.Fingerprint == fp || strings.TrimSpace(k.Key) == entry {
				id = k.ID
				break
			}
		}
		if id == "" {
			key, err := c.CreateProjectSSHKey(ctx, projectID, label, entry)
			if packet.IsAlreadyTaken(err) {
				// Another machine registered the same key since the list was read (machines of
				// one template are created together): use that one.
				key, err = findRegistered(ctx, c, projectID, fp, err)
			}
			if err != nil {
				return nil, err
			}
			existing = append(existing, *key)
			id = key.ID
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// findRegistered reads the project's keys again for the one with fingerprint fp; createErr is
// returned when it is not there after all.
func findRegistered(ctx context.Context, c packet.Client, projectID, fp string, createErr error) (*packet.SSHKey, error) {
	keys, err := c.ListProjectSSHKeys(ctx, projectID)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if keys[i].Fingerprint == fp {
			return &keys[i], nil
		}
	}
	return nil, createErr
}

// DeleteRegistered deletes the project SSH keys registered under label (by Resolve, for one
// cluster) and returns how many it deleted. A key another cluster reuses by fingerprint was
// registered under the first cluster's label and goes with it; the other cluster's devices keep
// the key they were created with, and its next devices register it again.
func DeleteRegistered(ctx context.Context, c packet.Client, projectID, label string) (int, error) {
	keys, err := c.ListProjectSSHKeys(ctx, projectID)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, k := range keys {
		if k.Label != label {
			continue
		}
		if err := c.DeleteSSHKey(ctx, k.ID); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}

// Fingerprint is the MD5 colon-hex fingerprint of an OpenSSH public key ("ssh-ed25519 AAAA...
// comment"), the form Packet reports keys with.
func Fingerprint(publicKey string) (string, error) {
	fields := strings.Fields(publicKey)
	if len(fields) < 2 {
		return "", fmt.Errorf("sshKeys entry %q is neither a project SSH key UUID nor an OpenSSH public key", shorten(publicKey))
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil || len(blob) == 0 {
		return "", fmt.Errorf("sshKeys entry %q is not an OpenSSH public key: its key data is not base64", shorten(publicKey))
	}
	sum := md5.Sum(blob) //nolint:gosec // see the import.
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(parts, ":"), nil
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
