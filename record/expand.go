package record

import (
	"fmt"
	"io"
	"slices"
)

// Expander turns a timeline of either format version into per-tick host
// states: a version-2 heartbeat line (Hosts) becomes one sample line per
// host it names, at the heartbeat's T, repeating that host's last sample
// line (Repeat set, the slices shared). Every other line passes through
// unchanged, so a version-1 timeline comes out as it went in. Memory: one
// sample line per host. The zero value is ready to use.
//
// Within one tick, the hosts that changed come before the hosts that did
// not (the order version 2 writes them); a consumer that needs host order
// within a tick sorts the tick's lines.
type Expander struct {
	last map[string]Line
	// Version is the format version the timeline stated (FormatFull until
	// a format line says otherwise).
	Version int
}

// Push expands one line (in timeline order) and passes the result to yield.
// A version-2 heartbeat naming a host with no sample line before it is an
// error: the reader cannot know the state it says is unchanged.
func (e *Expander) Push(l Line, yield func(Line) error) error {
	switch l.Kind {
	case KindFormat:
		e.Version = l.Version
	case KindSample:
		if e.last == nil {
			e.last = map[string]Line{}
		}
		e.last[l.Host] = Line{Controllers: l.Controllers, Subsystems: l.Subsystems}
	case KindHeartbeat:
		if len(l.Hosts) == 0 {
			break // version 1: an observation, no state
		}
		for _, h := range l.Hosts {
			prev, ok := e.last[h]
			if !ok {
				return fmt.Errorf("heartbeat names host %q, which has no sample line before it (a heartbeat repeats a host's last sample)", h)
			}
			if err := yield(Line{T: l.T, Kind: KindSample, Host: h, Controllers: prev.Controllers, Subsystems: prev.Subsystems, Repeat: true}); err != nil {
				return err
			}
		}
		return nil
	}
	return yield(l)
}

// ScanStates reads a timeline of either format version like ScanTimeline
// (same errors, naming name:line) and calls fn with what Expander makes of
// each line: every host's whole state at every tick it was observed. This
// is the one call a reader of states needs (checks, reports, exports).
func ScanStates(r io.Reader, name string, fn func(Line) error) error {
	var e Expander
	return ScanTimeline(r, name, func(l Line) error { return e.Push(l, fn) })
}

// Expand is Expander over a slice: the per-tick states of lines.
func Expand(lines []Line) ([]Line, error) {
	var e Expander
	out := make([]Line, 0, len(lines))
	for _, l := range lines {
		if err := e.Push(l, func(x Line) error { out = append(out, x); return nil }); err != nil {
			return out, err
		}
	}
	return out, nil
}

// SameState reports whether two sample lines show the same host state:
// equal controllers (every field of record.Controller) and equal
// subsystems, in order. Lines sharing their slices (a collector that
// reused an unchanged parse) compare in constant time.
func SameState(a, b Line) bool {
	if len(a.Controllers) != len(b.Controllers) || len(a.Subsystems) != len(b.Subsystems) {
		return false
	}
	if (len(a.Controllers) == 0 || &a.Controllers[0] == &b.Controllers[0]) &&
		(len(a.Subsystems) == 0 || &a.Subsystems[0] == &b.Subsystems[0]) {
		return true
	}
	return slices.EqualFunc(a.Controllers, b.Controllers, func(x, y Controller) bool {
		return x.Name == y.Name && x.NQN == y.NQN && x.Address == y.Address && x.State == y.State &&
			x.Transport == y.Transport && eqIntPtr(x.CtrlLossTmo, y.CtrlLossTmo) && slices.Equal(x.Legs, y.Legs)
	}) && slices.EqualFunc(a.Subsystems, b.Subsystems, func(x, y Subsystem) bool {
		return x.NQN == y.NQN && slices.Equal(x.NSIDs, y.NSIDs)
	})
}

func eqIntPtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
