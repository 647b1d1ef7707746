package bootemu

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"strings"
)

// kubeadmScriptPath is where the kubeadm bootstrap provider's Ignition output puts the commands
// that cloud-config would run (a systemd unit runs it on Flatcar).
const kubeadmScriptPath = "/etc/kubeadm.sh"

// ignitionConfig is the part of an Ignition (v3) config the emulation reads.
type ignitionConfig struct {
	Ignition struct {
		Version string `json:"version"`
	} `json:"ignition"`
	Storage struct {
		Files []struct {
			Path     string `json:"path"`
			Contents struct {
				Source      string  `json:"source"`
				Compression *string `json:"compression"`
			} `json:"contents"`
		} `json:"files"`
	} `json:"storage"`
}

// parseIgnition reads an Ignition config as Flatcar's first boot would: the files it writes, and
// the kubeadm commands in /etc/kubeadm.sh. Flatcar hosts learn their name from the metadata
// service (coreos-metadata), which the scripts read as ${COREOS_PACKET_HOSTNAME}.
func parseIgnition(data string, id Identity) (*Boot, error) {
	var cfg ignitionConfig
	if err := json.Unmarshal([]byte(data), &cfg); err != nil {
		return nil, bootErrorf("ignition: config is not valid: %v", err)
	}
	if !strings.HasPrefix(cfg.Ignition.Version, "3.") && !strings.HasPrefix(cfg.Ignition.Version, "2.") {
		return nil, bootErrorf("ignition: unsupported config version %q", cfg.Ignition.Version)
	}
	env := strings.NewReplacer("${COREOS_PACKET_HOSTNAME}", id.Hostname, "$COREOS_PACKET_HOSTNAME", id.Hostname)
	files := map[string]string{}
	for _, f := range cfg.Storage.Files {
		content, err := decodeDataURL(f.Contents.Source, f.Contents.Compression)
		if err != nil {
			return nil, bootErrorf("ignition: file %s: %v", f.Path, err)
		}
		files[f.Path] = env.Replace(content)
	}
	for path, content := range files {
		if err := unrenderedTemplate(content); err != nil {
			return nil, bootErrorf("ignition: file %s: %v", path, err)
		}
	}
	script, ok := files[kubeadmScriptPath]
	if !ok {
		return nil, bootErrorf("ignition: no %s: nothing runs kubeadm", kubeadmScriptPath)
	}
	return fromFiles(files, strings.Split(script, "\n"), id)
}

// decodeDataURL decodes the data: URLs Ignition carries ("data:,text" or "data:;base64,...").
func decodeDataURL(source string, compression *string) (string, error) {
	if source == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(source, "data:")
	if !ok {
		return "", bootErrorf("source %q is not a data URL (a host here reaches no other)", source)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", bootErrorf("malformed data URL")
	}
	var raw []byte
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return "", err
		}
		raw = b
	} else {
		s, err := url.PathUnescape(payload)
		if err != nil {
			return "", err
		}
		raw = []byte(s)
	}
	if compression != nil && *compression == "gzip" {
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return "", err
		}
		if raw, err = io.ReadAll(r); err != nil {
			return "", err
		}
	}
	return string(raw), nil
}
