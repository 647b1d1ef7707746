package packet

import (
	"context"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/packethost/packngo"
)

// planJSON decodes the parts of a plan packngo's Plan type drops (GPUs live in specs.gpu).
type planJSON struct {
	Slug        string `json:"slug"`
	Description string `json:"description"`
	Class       string `json:"class"`
	Specs       struct {
		CPUs   []specItem `json:"cpus"`
		GPUs   []specItem `json:"gpu"`
		Drives []specItem `json:"drives"`
		Memory struct {
			Total string `json:"total"`
		} `json:"memory"`
	} `json:"specs"`
	AvailableIn       []struct{ Code string } `json:"available_in"`
	AvailableInMetros []struct{ Code string } `json:"available_in_metros"`
}

type specItem struct {
	Count int    `json:"count"`
	Type  string `json:"type"`
}

func (c *client) ListPlans(ctx context.Context, projectID string) ([]Plan, error) {
	var root struct {
		Plans []planJSON `json:"plans"`
	}
	err := c.do(ctx, "GET /projects/{id}/plans", func(api *packngo.Client) (*packngo.Response, error) {
		// Packet answers available_in and available_in_metros with references unless asked to
		// include them, and the codes are what failure domains are made of.
		return api.DoRequest("GET", path.Join("/projects", projectID, "plans")+"?include=available_in,available_in_metros", nil, &root)
	})
	if err != nil {
		return nil, err
	}
	plans := make([]Plan, 0, len(root.Plans))
	for _, p := range root.Plans {
		plan := Plan{Slug: p.Slug, MemoryBytes: parseSize(p.Specs.Memory.Total), Architecture: architectureOf(p.Slug, p.Class)}
		plan.CPUs = cpuCores(p.Specs.CPUs, p.Description)
		for _, gpu := range p.Specs.GPUs {
			plan.GPUs += gpu.Count
		}
		for _, drive := range p.Specs.Drives {
			plan.Drives += drive.Count
		}
		for _, m := range p.AvailableInMetros {
			plan.AvailableInMetros = append(plan.AvailableInMetros, m.Code)
		}
		for _, f := range p.AvailableIn {
			plan.AvailableInFacilities = append(plan.AvailableInFacilities, f.Code)
		}
		plans = append(plans, plan)
	}
	return plans, nil
}

// facilitiesTTL is how long the facility list is kept. Packet opens or retires a facility a few
// times a year, and every metro cluster asks for the list when it computes its failure domains.
const facilitiesTTL = time.Hour

// facilityCache is the last facility list a client read, shared by the clusters using it.
type facilityCache struct {
	mu         sync.Mutex
	facilities []Facility
	readAt     time.Time
}

func (c *client) ListFacilities(ctx context.Context) ([]Facility, error) {
	c.facilities.mu.Lock()
	cached, readAt := c.facilities.facilities, c.facilities.readAt
	c.facilities.mu.Unlock()
	if cached != nil && c.now().Sub(readAt) < facilitiesTTL {
		return slices.Clone(cached), nil
	}
	out, err := c.readFacilities(ctx)
	if err != nil {
		return nil, err
	}
	c.facilities.mu.Lock()
	c.facilities.facilities, c.facilities.readAt = out, c.now()
	c.facilities.mu.Unlock()
	return slices.Clone(out), nil
}

func (c *client) readFacilities(ctx context.Context) ([]Facility, error) {
	var facilities []packngo.Facility
	err := c.do(ctx, "GET /facilities", func(api *packngo.Client) (resp *packngo.Response, err error) {
		facilities, resp, err = api.Facilities.List(&packngo.ListOptions{Includes: []string{"metro"}})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Facility, 0, len(facilities))
	for _, f := range facilities {
		fac := Facility{Code: f.Code}
		if f.Metro != nil {
			fac.Metro = f.Metro.Code
		}
		out = append(out, fac)
	}
	return out, nil
}

var coresPattern = regexp.MustCompile(`(?i)(\d+)[\s-]*cores?`)

// cpuCores counts a plan's cores from its CPU types ("AMD EPYC 7402P 24-Core Processor"); when a
// type does not say, the plan's description gives the total ("Intel Xeon E-2278G, 8 cores"), and
// failing that each CPU counts as one.
func cpuCores(cpus []specItem, description string) int {
	total, sockets := 0, 0
	for _, cpu := range cpus {
		sockets += cpu.Count
		total += cpu.Count * coresIn(cpu.Type)
	}
	for _, cpu := range cpus {
		if coresIn(cpu.Type) == 0 {
			if n := coresIn(description); n > 0 {
				return n
			}
			return sockets
		}
	}
	return total
}

func coresIn(s string) int {
	if m := coresPattern.FindStringSubmatch(s); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	return 0
}

var sizePattern = regexp.MustCompile(`(?i)^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B)\s*$`)

// parseSize turns Packet's memory totals ("32GB", "256GB", "1TB") into bytes; Packet's GB are
// the binary ones the hardware has.
func parseSize(s string) int64 {
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	unit := map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[strings.ToUpper(m[2])[0]]
	return int64(n * unit)
}

// architectureOf maps a plan to a Kubernetes architecture: Packet slugs end in ".x86" or
// ".arm" (and Ampere plans are in the "arm" class).
func architectureOf(slug, class string) string {
	if strings.HasSuffix(slug, ".arm") || strings.Contains(strings.ToLower(class), "arm") {
		return "arm64"
	}
	return "amd64"
}
