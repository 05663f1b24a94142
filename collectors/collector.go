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
type Sampler struct {
	Hosts      []backend.Host
	Collectors []Collector
	Timeline   *record.TimelineWriter
}

// NewSampler samples hosts with the default collectors (NVMe).
func NewSampler(hosts []backend.Host, tl *record.TimelineWriter) *Sampler {
	return &Sampler{Hosts: hosts, Collectors: []Collector{&NVMe{}}, Timeline: tl}
}

// SampleAll takes one sample of every host at time t, in host order.
func (s *Sampler) SampleAll(t float64) error {
	for _, h := range s.Hosts {
		for _, c := range s.Collectors {
			lines, err := c.Collect(t, h)
			if err != nil {
				return fmt.Errorf("collector %s on host %s at t=%.3f s: %w", c.Name(), h.Name(), t, err)
			}
			for _, l := range lines {
				if err := s.Timeline.Append(l); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
