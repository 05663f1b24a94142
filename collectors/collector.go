package collectors

import (
	"fmt"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
)

// Collector samples one host at one instant.
type Collector interface {
	// Name identifies the collector in errors.
	Name() string
	// Collect returns the timeline lines describing host h at time t
	// (seconds since run start). An error means the host could not be read.
	Collect(t float64, h backend.Host) ([]record.Line, error)
}

// Sampler runs every collector on every host and appends the lines to the
// timeline.
//
// With ChangeOnly (timeline format version 2, record/FORMAT.md) a host's
// sample line is appended only when its state differs from the last one
// appended for that host; the hosts sampled unchanged at a tick are named
// in one heartbeat line at the end of the tick. A host whose collector
// fails is in neither, so its silence is a hole to the checks. The logic
// is the backend's neither: any Collector over any backend.Host gets it.
type Sampler struct {
	Hosts      []backend.Host
	Collectors []Collector
	Timeline   *record.TimelineWriter
	ChangeOnly bool

	last map[string]record.Line // by host: the last sample line appended
}

// NewSampler samples hosts with the default collectors (NVMe).
func NewSampler(hosts []backend.Host, tl *record.TimelineWriter) *Sampler {
	return &Sampler{Hosts: hosts, Collectors: []Collector{&NVMe{}}, Timeline: tl}
}

// SampleAll takes one sample of every host at time t, in host order.
func (s *Sampler) SampleAll(t float64) error {
	var unchanged []string
	for _, h := range s.Hosts {
		for _, c := range s.Collectors {
			lines, err := c.Collect(t, h)
			if err != nil {
				return fmt.Errorf("collector %s on host %s at t=%.3f s: %w", c.Name(), h.Name(), t, err)
			}
			for _, l := range lines {
				if s.ChangeOnly && l.Kind == record.KindSample {
					if prev, ok := s.last[l.Host]; ok && record.SameState(prev, l) {
						unchanged = append(unchanged, l.Host)
						continue
					}
					if s.last == nil {
						s.last = map[string]record.Line{}
					}
					s.last[l.Host] = l
				}
				if err := s.Timeline.Append(l); err != nil {
					return err
				}
			}
		}
	}
	if len(unchanged) > 0 {
		return s.Timeline.Append(record.Line{T: t, Kind: record.KindHeartbeat, Hosts: unchanged})
	}
	return nil
}
