package packet

import (
	"context"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/packethost/packngo"
)

// Device snapshots. A fleet of machines that are all provisioning would cost one
// GET /devices/{id} per machine per poll, and at 1000 machines those polls alone exceed the
// project's budget of 10 requests a second. One paginated list of the project's devices answers
// every poll made within a few seconds of it instead.
//
// A snapshot is mostly evidence that a device exists in the state it shows. Lists lag: a new
// device may be missing for a while and a deleted one may linger. So a device missing from the
// snapshot is looked up by ID, and decisions that destroy something never rely on a snapshot.
// "Gone" is Packet's 404, with one exception: a device whose deletion Packet accepted before a
// list that came in one page and does not show it (DeletionStatus). Lagging can only keep such
// a device in the list, and a single page is one answer, not offsets that shift while paging.
// The devices this client created since the list are part of the
// snapshot too, as Packet's answer to the create showed them: the machine that created one is
// often reconciled again at once, and would otherwise read its brand-new device by ID.
//
// Snapshots live in the client, so they are per API key, and are keyed by project. There is no
// background goroutine: a snapshot is refreshed by the first caller that finds it too old, while
// the others wait for that refresh. Memory is bounded by maxSnapshotDevices per project and by
// dropping snapshots nobody asked for in snapshotIdleTTL.

const (
	// DefaultSnapshotMaxAge is how old a snapshot may be and still answer; see Options. A list
	// of a thousand devices is several megabytes to decode, and a provisioning fleet always has
	// a look waiting for the next one.
	DefaultSnapshotMaxAge = 2 * time.Second
	// maxPageSize is Packet's largest page: 1000 devices cost one request.
	maxPageSize = 1000
	// maxSnapshotDevices bounds a snapshot. A bigger project is polled by ID.
	maxSnapshotDevices = 10 * maxPageSize
	// snapshotIdleTTL is how long an unused snapshot is kept.
	snapshotIdleTTL = 5 * time.Minute
	// snapshotBudgetShare is the share of a small request budget that a provisioning fleet's
	// lists may take; see SnapshotMaxAge.
	snapshotBudgetShare = 0.1
)

// SnapshotMaxAge is how old a project's device list may be for a client of qps requests a
// second: DefaultSnapshotMaxAge, or longer where a list every DefaultSnapshotMaxAge would take
// more than snapshotBudgetShare of the budget. While a fleet provisions something always waits
// for the next list, so at a small budget lists every DefaultSnapshotMaxAge would take a large
// share of it from the creates (docs/performance.md has the measured shares).
func SnapshotMaxAge(qps float64) time.Duration {
	if qps <= 0 {
		return DefaultSnapshotMaxAge
	}
	return max(DefaultSnapshotMaxAge, time.Duration(float64(time.Second)/(snapshotBudgetShare*qps)))
}

// deviceSnapshots holds the snapshots of one client's projects.
type deviceSnapshots struct {
	maxAge   time.Duration
	pageSize int
	now      func() time.Time

	mu       sync.Mutex
	projects map[string]*projectSnapshot
	// deletes are when this client sent the deletes of devices no list has shown gone yet
	// (deprovisioning.go).
	deletes map[string]time.Time
}

// projectSnapshot is the last list of one project's devices.
type projectSnapshot struct {
	// refreshing is a one-slot semaphore held by the caller that refreshes the snapshot, so one
	// request serves everyone who asks meanwhile, and waiting respects each caller's context.
	refreshing chan struct{}
	// pageBytes is the largest page of the last list, for sizing the next one's buffer. Only the
	// holder of refreshing uses it.
	pageBytes int

	// Guarded by deviceSnapshots.mu.
	takenAt  time.Time
	lastUsed time.Time
	devices  map[string]Device
	// onePage is set when the list fit in one page: one answer, so a device it does not show
	// was not in the project at that moment. A list of several pages may skip a device when
	// others are deleted between two pages (they are offsets).
	onePage bool
	// created are the devices this client created since the list was taken, as the create
	// answered; dropped by the next list that started after them.
	created map[string]createdDevice
	// tooBig is set when the project had more than maxSnapshotDevices devices: its devices are
	// read by ID until the snapshot is older than snapshotIdleTTL and worth trying again.
	tooBig bool
	// deprovisioned are the deprovisioning times measured from this project's lists.
	deprovisioned []timedDuration
}

// createdDevice is a device as Packet's answer to its create showed it, and when.
type createdDevice struct {
	Device
	at time.Time
}

func newDeviceSnapshots(maxAge time.Duration, pageSize int, now func() time.Time) *deviceSnapshots {
	return &deviceSnapshots{maxAge: maxAge, pageSize: pageSize, now: now, projects: map[string]*projectSnapshot{}}
}

// project returns the project's snapshot entry, and drops those nobody used for a while.
func (s *deviceSnapshots) project(projectID string) *projectSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, p := range s.projects {
		if now.Sub(p.lastUsed) > snapshotIdleTTL {
			delete(s.projects, id)
		}
	}
	p, ok := s.projects[projectID]
	if !ok {
		p = &projectSnapshot{refreshing: make(chan struct{}, 1)}
		s.projects[projectID] = p
	}
	p.lastUsed = now
	return p
}

// listing is one list of a project's devices.
type listing struct {
	devices map[string]Device
	takenAt time.Time
	onePage bool
}

// fresh returns the snapshot's list if it was taken at most maxAge before asked. ok is false
// when it is older; a project too big to keep reports ok with no devices.
func (s *deviceSnapshots) fresh(p *projectSnapshot, asked time.Time) (l listing, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l = listing{devices: p.devices, takenAt: p.takenAt, onePage: p.onePage}
	age := asked.Sub(p.takenAt)
	if p.tooBig {
		return l, age <= snapshotIdleTTL
	}
	return l, p.devices != nil && age <= s.maxAge
}

// addCreated adds a device this client just created to its project's snapshot, if there is one.
func (s *deviceSnapshots) addCreated(projectID string, dev Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[projectID]
	if !ok || p.tooBig {
		return
	}
	if p.created == nil {
		p.created = map[string]createdDevice{}
	}
	p.created[dev.ID] = createdDevice{Device: dev, at: s.now()}
}

// createdSince returns the devices this client created since the project's list (a copy: few,
// dropped at each list).
func (s *deviceSnapshots) createdSince(p *projectSnapshot) []Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Device, 0, len(p.created))
	for _, d := range p.created {
		out = append(out, d.Device)
	}
	return out
}

// snapshot returns the project's devices as listed at most maxAge ago, listing them again if
// the last list is older, with the devices this client created since; no devices when the
// project is too big to keep. The map is never written after it is stored, so callers may read it.
func (c *client) snapshot(ctx context.Context, projectID string) (map[string]Device, []Device, error) {
	asked := c.snapshots.now()
	p := c.snapshots.project(projectID)
	l, err := c.listedSnapshot(ctx, projectID, p, asked)
	if err != nil || l.devices == nil {
		return l.devices, nil, err
	}
	return l.devices, c.snapshots.createdSince(p), nil
}

// listedSnapshot returns the project's last list if it was taken at most maxAge before asked,
// and lists the project again otherwise.
func (c *client) listedSnapshot(ctx context.Context, projectID string, p *projectSnapshot, asked time.Time) (listing, error) {
	if l, ok := c.snapshots.fresh(p, asked); ok {
		return l, nil
	}
	select {
	case p.refreshing <- struct{}{}:
	case <-ctx.Done():
		return listing{}, ctx.Err()
	}
	defer func() { <-p.refreshing }()
	// Someone else may have refreshed it while this caller waited. Freshness counts from when
	// this caller asked, not from now: a list that takes longer than maxAge would otherwise be
	// stale for everyone who waited for it, and each of them would list the project again, one
	// after the other.
	if l, ok := c.snapshots.fresh(p, asked); ok {
		return l, nil
	}
	return c.refreshSnapshot(ctx, projectID, p)
}

// DeviceStatus answers from the project's snapshot when it shows the device, and otherwise
// reads the device by ID: missing from a list is no evidence of anything.
func (c *client) DeviceStatus(ctx context.Context, projectID, id string) (*Device, error) {
	if c.snapshots == nil || projectID == "" {
		return c.GetDevice(ctx, id)
	}
	// On any trouble with the list, do what a caller without a snapshot does.
	if devices, created, err := c.snapshot(ctx, projectID); err == nil {
		if dev, found := devices[id]; found {
			if dev.State == DeviceStateFailed {
				return c.withLastEvent(ctx, projectID, dev), nil
			}
			return &dev, nil
		}
		if i := slices.IndexFunc(created, func(d Device) bool { return d.ID == id }); i >= 0 {
			return &created[i], nil
		}
	}
	return c.GetDevice(ctx, id)
}

// withLastEvent adds to a failed device of the snapshot the provisioning event that says why it
// failed, which lists leave out (snapshotListOptions). It asks for a list filtered to the device
// rather than reading it by ID: Packet answers 403 to reads of some failed devices, and lists
// show them. On any trouble the device is returned as the snapshot has it.
func (c *client) withLastEvent(ctx context.Context, projectID string, dev Device) *Device {
	opts := (&packngo.ListOptions{PerPage: c.pageSize, Includes: deviceIncludes}).Filter("search", dev.ID)
	found, err := c.listDevices(ctx, projectID, opts)
	if i := slices.IndexFunc(found, func(d Device) bool { return d.ID == dev.ID }); err == nil && i >= 0 {
		return &found[i]
	}
	return &dev
}

// DeletionStatus answers from the project's snapshot when a list taken after deleteAsked is
// conclusive: it shows the device deprovisioning, or it came in one page and does not show the
// device at all, which is then reported as not found. Anything else (a device listed in another
// state, perhaps a list lagging behind the delete; a list of several pages; no list) is read by ID.
func (c *client) DeletionStatus(ctx context.Context, projectID, id string, deleteAsked time.Time) (*Device, error) {
	if c.snapshots == nil || projectID == "" {
		return c.GetDevice(ctx, id)
	}
	l, err := c.listedSnapshot(ctx, projectID, c.snapshots.project(projectID), c.snapshots.now())
	if err == nil && l.devices != nil && l.takenAt.After(deleteAsked) {
		dev, listed := l.devices[id]
		switch {
		case listed && dev.State == DeviceStateDeprovisioning:
			return &dev, nil
		case !listed && l.onePage:
			return nil, &Error{Kind: KindNotFound, Operation: "GET /projects/{id}/devices",
				Messages: []string{"device " + id + " is not in the project's list taken after its deletion was asked"}}
		}
	}
	return c.GetDevice(ctx, id)
}

// RecentDevicesByTags is FindDevicesByTags answered from the project's snapshot.
func (c *client) RecentDevicesByTags(ctx context.Context, projectID string, tags ...string) ([]Device, error) {
	if c.snapshots == nil {
		return c.FindDevicesByTags(ctx, projectID, tags...)
	}
	devices, created, err := c.snapshot(ctx, projectID)
	if err != nil {
		return nil, err
	}
	if devices == nil { // too big to keep: ask Packet to filter
		return c.FindDevicesByTags(ctx, projectID, tags...)
	}
	var found []Device
	for _, d := range devices {
		if hasAllTags(d.Tags, tags) {
			found = append(found, d)
		}
	}
	for _, d := range created {
		if _, listed := devices[d.ID]; !listed && hasAllTags(d.Tags, tags) {
			found = append(found, d)
		}
	}
	return found, nil
}

// snapshotListOptions asks for a page of devices as packngo's Devices.List does (it adds
// facility), but with the plan, operating system, network ports and provisioning events as
// references only: the provider reads none of them from a list (the last event only of a failed
// device, which withLastEvent asks for), and they are over a third of its bytes (of a
// thousand devices the simulator sends, 1.9 of 6.9 MB, then 1.1 of 5.3 MB), each decoded at
// every refresh.
func snapshotListOptions(page, perPage int) *packngo.ListOptions {
	return &packngo.ListOptions{Page: page, PerPage: perPage, Includes: []string{"facility", "hardware_reservation", "metro"},
		Excludes: []string{"plan", "operating_system", "network_ports", "provisioning_events"}}
}

// refreshSnapshot lists the project's devices page by page and stores them. A project with more
// than maxSnapshotDevices devices gets no snapshot until its next refresh.
func (c *client) refreshSnapshot(ctx context.Context, projectID string, p *projectSnapshot) (listing, error) {
	takenAt := c.snapshots.now()
	var firstSent time.Time
	devices := map[string]Device{}
	largest := 0
	defer func() { p.pageBytes = largest }()
	page := 1
	for ; ; page++ {
		opts := snapshotListOptions(page, c.snapshots.pageSize)
		var list devicesPage
		sent, err := c.doObserved(ctx, "GET /projects/{id}/devices", func(api *packngo.Client) (*packngo.Response, error) {
			resp, size, err := getPage(api, opts.WithQuery(path.Join("/projects", projectID, "devices")), p.pageBytes, &list)
			largest = max(largest, size)
			return resp, err
		})
		if err != nil {
			return listing{}, err
		}
		if page == 1 {
			firstSent = sent
		}
		// takenAt, when the list was asked for, is what "a list taken after X" means; a
		// device's percentage is as of its page's request, which may be sent seconds later
		// (it waits its turn in the rate limiter).
		for i := range list.Devices {
			dev := list.Devices[i].device()
			dev.ObservedAt = sent
			devices[dev.ID] = dev
		}
		if len(devices) > maxSnapshotDevices {
			devices = nil
			break
		}
		// A short page is the last one.
		if len(list.Devices) < c.snapshots.pageSize {
			break
		}
	}
	c.snapshots.mu.Lock()
	defer c.snapshots.mu.Unlock()
	carryFirstReadings(p.devices, devices)
	if page == 1 && devices != nil && p.devices != nil {
		// One answer, as of when it was sent: what it does not show was gone by then.
		c.snapshots.learnDeprovisioned(p, p.devices, devices, firstSent)
	}
	p.takenAt, p.devices, p.tooBig, p.onePage = takenAt, devices, devices == nil, page == 1
	for id, d := range p.created {
		if d.at.Before(takenAt) {
			delete(p.created, id) // the list started after the create: it shows what Packet has now
		}
	}
	return listing{devices: devices, takenAt: takenAt, onePage: p.onePage}, nil
}

// carryFirstReadings gives each provisioning device of a new list the first percentage an
// earlier list showed of it, carried from list to list while it provisions and progresses.
func carryFirstReadings(earlier, devices map[string]Device) {
	for id, d := range devices {
		before, ok := earlier[id]
		if !ok || d.State != DeviceStateProvisioning || before.State != DeviceStateProvisioning ||
			d.ProvisioningPercentage < before.ProvisioningPercentage {
			continue
		}
		switch {
		case before.FirstReading != nil:
			d.FirstReading = before.FirstReading
		case before.ProvisioningPercentage > 0 && !before.ObservedAt.IsZero():
			d.FirstReading = &Reading{At: before.ObservedAt, Percentage: before.ProvisioningPercentage}
		default:
			continue
		}
		devices[id] = d
	}
}
