package packetsim

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxConsoleLines bounds what one device's serial console keeps, as a real console's
// scroll-back does.
const maxConsoleLines = 500

// consoles holds what each device's operating system printed on its serial console. On Packet
// that is the Serial over SSH console, the place a person looks when a server does not come up;
// here the boot emulation writes to it. It lives beside the store, not in it: a console is not
// part of the API's state and is not saved in the state file.
type consoles struct {
	mu    sync.Mutex
	lines map[string][]string
}

// AppendConsole adds lines to a device's serial console, each stamped with the simulator's time.
func (s *Server) AppendConsole(deviceID string, lines ...string) {
	now := s.Now().UTC().Format(time.RFC3339)
	c := &s.consoles
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lines == nil {
		c.lines = map[string][]string{}
	}
	id := strings.ToLower(deviceID)
	for _, l := range lines {
		c.lines[id] = append(c.lines[id], "["+now+"] "+l)
	}
	if n := len(c.lines[id]); n > maxConsoleLines {
		c.lines[id] = append([]string(nil), c.lines[id][n-maxConsoleLines:]...)
	}
}

// Console returns a device's serial console lines, oldest first.
func (s *Server) Console(deviceID string) []string {
	c := &s.consoles
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines[strings.ToLower(deviceID)]...)
}

// AddDeviceEvent records an event on a device, as Packet's own systems do (GET
// /devices/{id}/events shows it). It reports whether the device exists.
func (s *Server) AddDeviceEvent(deviceID, typ, body string) bool {
	now := s.writeLock()
	defer s.mu.Unlock()
	d := s.st.Devices[strings.ToLower(deviceID)]
	if d == nil {
		return false
	}
	s.addEvent(d, now, typ, body)
	return true
}

// HostDown reports whether a host_down fault holds the device's operating system down. The boot
// emulation asks on every look; asking does not count as a boot.
func (s *Server) HostDown(d Device) bool {
	return s.faults.holds(faultCall{resourceID: strings.ToLower(d.ID), tags: d.Tags}, FaultHostDown)
}

// BootHostDown counts a boot of the device against its host_down fault and reports whether the
// host is still down after this boot.
func (s *Server) BootHostDown(d Device) bool {
	c := faultCall{resourceID: strings.ToLower(d.ID), tags: d.Tags}
	s.faults.take(c, FaultHostDown)
	return s.faults.holds(c, FaultHostDown)
}

func (s *Server) consoleRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /_sim/devices/{id}/console", func(w http.ResponseWriter, r *http.Request) {
		lines := s.Console(r.PathValue("id"))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}
