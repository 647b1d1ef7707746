package packetsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// stateFileVersion guards against loading a file of another layout.
const stateFileVersion = 1

type stateFile struct {
	Version int    `json:"version"`
	Store   *store `json:"store"`
}

// loadStateFile returns nil (and no error) when the file does not exist.
func loadStateFile(path string) (*store, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if sf.Version != stateFileVersion || sf.Store == nil {
		return nil, fmt.Errorf("state file %s: unsupported version %d", path, sf.Version)
	}
	sf.Store.afterLoad()
	return sf.Store, nil
}

// SaveState writes the state file atomically: a temporary file in the same
// directory is written and fsynced, then renamed over the old one, so a
// crash at any point leaves either the old or the new complete file.
func (s *Server) SaveState() error {
	if s.opts.StateFile == "" {
		return errors.New("no state file configured")
	}
	s.mu.Lock()
	s.st.Now = s.clock.Now()
	data, err := json.Marshal(stateFile{Version: stateFileVersion, Store: s.st})
	s.dirty = false
	s.mu.Unlock()
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.opts.StateFile)
	tmp, err := os.CreateTemp(dir, filepath.Base(s.opts.StateFile)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.opts.StateFile); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // persist the rename itself
		d.Close()
	}
	return nil
}

// startFlusher writes the state file at most once per interval while dirty.
func (s *Server) startFlusher() {
	interval := s.opts.StateFlushInterval
	if interval <= 0 {
		interval = time.Second
	}
	s.flushWG.Add(1)
	go func() {
		defer s.flushWG.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.mu.RLock()
				dirty := s.dirty
				s.mu.RUnlock()
				if dirty {
					_ = s.SaveState()
				}
			}
		}
	}()
}
