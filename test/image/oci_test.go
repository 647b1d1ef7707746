package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"strings"
	"testing"
)

// ociImage is what the tests read from an OCI archive (image-layout in a tar): its reference, its
// config and the files its layers leave, the later layers over the earlier ones.
type ociImage struct {
	ref    string
	config struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Config       struct {
			Entrypoint []string          `json:"Entrypoint"`
			Cmd        []string          `json:"Cmd"`
			User       string            `json:"User"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
	}
	files map[string]file
	size  int64
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

func readArchive(t *testing.T, archive string) *ociImage {
	t.Helper()
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		blobs[path.Clean(h.Name)] = data
	}

	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	mustDecode(t, blobs["index.json"], &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want one", len(index.Manifests))
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	mustDecode(t, blob(t, blobs, index.Manifests[0]), &manifest)

	img := &ociImage{ref: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"], files: map[string]file{}}
	mustDecode(t, blob(t, blobs, manifest.Config), &img.config)
	for _, layer := range manifest.Layers {
		img.size += layer.Size
		unpackLayer(t, layer, blob(t, blobs, layer), img.files)
	}
	return img
}

func blob(t *testing.T, blobs map[string][]byte, d descriptor) []byte {
	t.Helper()
	data, ok := blobs["blobs/"+strings.Replace(d.Digest, ":", "/", 1)]
	if !ok || int64(len(data)) != d.Size {
		t.Fatalf("blob %s (%s): missing or not %d bytes", d.Digest, d.MediaType, d.Size)
	}
	return data
}

// unpackLayer applies one layer to files, whiteouts included.
func unpackLayer(t *testing.T, layer descriptor, data []byte, files map[string]file) {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	if strings.HasSuffix(layer.MediaType, "+gzip") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("layer %s: %v", layer.Digest, err)
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "/")
		if name == "." {
			continue
		}
		if dir, base := path.Split(name); strings.HasPrefix(base, ".wh.") {
			delete(files, dir+strings.TrimPrefix(base, ".wh."))
			continue
		}
		f := file{mode: h.Mode, uid: h.Uid}
		switch h.Typeflag {
		case tar.TypeDir:
			name += "/"
		case tar.TypeReg:
			if f.data, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		default:
			// Links and devices have no place in this image: keep them, named by kind, so the
			// file-set check reports them.
			name += " (" + string(h.Typeflag) + " -> " + h.Linkname + ")"
		}
		files[name] = f
	}
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
