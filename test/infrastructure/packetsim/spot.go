package packetsim

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// The spot market. Packet sold idle servers by the hour at a market price per metro and plan;
// a spot device is created with a maximum bid (spot_price_max), and a device whose bid the market
// price rises above gets a termination_time (about two minutes ahead) and is deleted then. A
// termination_time set by the user at create ends the device the same way.

// defaultSpotShare is the default spot price as a share of the plan's on-demand price.
const defaultSpotShare = 0.2

// defaultSpotPrice is a plan's starting spot price: a fifth of its hourly price, in cents.
func defaultSpotPrice(p SeedPlan) float64 {
	price := p.PriceHour
	if price <= 0 {
		price = 1
	}
	return math.Round(price*defaultSpotShare*100) / 100
}

// seedSpotPrices is the market a new store starts with: every plan sold on the spot market
// (deployment type spot_market) in every metro that offers it.
func seedSpotPrices(seed *Seed) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, p := range seed.Plans {
		if !p.soldAs("spot_market") {
			continue
		}
		for metro := range p.Capacity {
			if out[metro] == nil {
				out[metro] = map[string]float64{}
			}
			out[metro][p.Slug] = defaultSpotPrice(p)
		}
	}
	return out
}

// spotPrice is the market price of a plan in a metro, and whether the plan is sold there.
// Caller holds a lock.
func (s *Server) spotPrice(metro, plan string) (float64, bool) {
	p, ok := s.st.SpotPrices[metro][plan]
	return p, ok
}

// checkSpotBid refuses a spot create whose bid is below the market, as Packet refuses it.
// Caller holds a lock.
func (s *Server) checkSpotBid(metro, plan string, bid float64) error {
	price, ok := s.spotPrice(metro, plan)
	if !ok {
		return errorf(http.StatusUnprocessableEntity, fmt.Sprintf("Spot market is not available for plan %s in metro %s", plan, metro))
	}
	if bid < price {
		return errorf(http.StatusUnprocessableEntity, fmt.Sprintf(
			"Spot price max %.4g is below the current spot market price of %.4g for plan %s in metro %s", bid, price, plan, metro))
	}
	return nil
}

// SetSpotPrice moves the market price of a plan in a metro. Every spot device there whose bid is
// now below the price is outbid: it gets a termination_time TerminationNotice ahead (unless it
// already has an earlier one) and is deleted then.
func (s *Server) SetSpotPrice(metro, plan string, price float64) error {
	if price < 0 || math.IsNaN(price) || math.IsInf(price, 0) {
		return fmt.Errorf("price must be a number ≥ 0, not %v", price)
	}
	metro = strings.ToLower(metro)
	now := s.writeLock()
	defer s.mu.Unlock()
	if _, ok := s.spotPrice(metro, plan); !ok {
		return fmt.Errorf("plan %s is not sold in metro %s", plan, metro)
	}
	s.st.SpotPrices[metro][plan] = price
	at := now.Add(s.timing.TerminationNotice)
	for _, d := range s.st.Devices {
		if !d.SpotInstance || d.Metro != metro || d.Plan != plan || d.SpotPriceMax >= price || d.State == StateDeprovisioning {
			continue
		}
		if d.TerminationTime != nil && !d.TerminationTime.After(at) {
			continue
		}
		t := at
		d.TerminationTime, d.UpdatedAt = &t, now
		s.addEvent(d, now, "spot.outbid", fmt.Sprintf("Spot market price %.4g is above the bid %.4g; the device is terminated at %s",
			price, d.SpotPriceMax, rfc3339(t)))
		s.noteDue(t)
	}
	return nil
}

// SpotPrices returns the market prices, metro → plan → price.
func (s *Server) SpotPrices() map[string]map[string]float64 {
	s.readLock()
	defer s.mu.RUnlock()
	out := make(map[string]map[string]float64, len(s.st.SpotPrices))
	for metro, plans := range s.st.SpotPrices {
		out[metro] = make(map[string]float64, len(plans))
		for plan, p := range plans {
			out[metro][plan] = p
		}
	}
	return out
}

// terminate ends a device at its termination_time: it is deprovisioned like a deleted one.
func (s *Server) terminate(d *Device, at time.Time) {
	d.TerminationTime = nil
	s.addEvent(d, at, "instance.terminated", "Device reached its termination time")
	s.enterState(d, StateDeprovisioning, at)
}

// listSpotPrices answers GET /market/spot/prices (by facility) and .../metros (by metro).
func (s *Server) listSpotPrices(byMetro bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.readLock()
		out := map[string]map[string]map[string]float64{}
		for metro, plans := range s.st.SpotPrices {
			for _, key := range s.locationKeys(metro, byMetro) {
				out[key] = map[string]map[string]float64{}
				for plan, price := range plans {
					out[key][plan] = map[string]float64{"price": price}
				}
			}
		}
		s.mu.RUnlock()
		s.writeJSON(w, http.StatusOK, map[string]any{"spot_market_prices": out})
	}
}

// spotControlRoutes serve the market over the control API: GET /_sim/spot-market and
// PUT /_sim/spot-market/{metro}/{plan} with {"price": 1.5}.
func (s *Server) spotControlRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /_sim/spot-market", func(w http.ResponseWriter, r *http.Request) {
		s.writeJSON(w, http.StatusOK, map[string]any{"prices": s.SpotPrices()})
	})
	m.HandleFunc("PUT /_sim/spot-market/{metro}/{plan}", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Price *float64 `json:"price"`
		}
		if err := decodeBody(r, &req); err != nil {
			s.writeError(w, err)
			return
		}
		if req.Price == nil {
			s.writeError(w, errorf(http.StatusUnprocessableEntity, "price is required"))
			return
		}
		if err := s.SetSpotPrice(r.PathValue("metro"), r.PathValue("plan"), *req.Price); err != nil {
			s.writeError(w, errorf(http.StatusUnprocessableEntity, err.Error()))
			return
		}
		s.writeBody(w, http.StatusNoContent, nil)
	})
}
