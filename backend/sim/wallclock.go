package sim

import "time"

// WallClock is a sim.Clock driven by the monotonic wall clock: Now is the
// seconds since the clock was made, and WaitUntil sleeps. Inject it
// (Config.Clock) when real processes (fio) run against the simulation; only
// the schedule stays reproducible then.
type WallClock struct{ start time.Time }

// NewWallClock starts a wall clock at 0 now.
func NewWallClock() *WallClock { return &WallClock{start: time.Now()} }

// Now implements sim.Clock.
func (c *WallClock) Now() float64 { return time.Since(c.start).Seconds() }

// WaitUntil implements sim.Clock: it sleeps until Now() >= t.
func (c *WallClock) WaitUntil(t float64) {
	for {
		d := t - c.Now()
		if d <= 0 {
			return
		}
		time.Sleep(time.Duration(d * float64(time.Second)))
	}
}
