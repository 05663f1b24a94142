package sim

// Clock is the simulation's time source, in seconds since run start. The
// world never reads the wall clock itself: by default it runs on a
// VirtualClock (one seed fixes everything); a caller that runs real
// processes against the simulation injects a clock driven by the wall clock,
// whose WaitUntil sleeps, so that only the schedule stays reproducible.
type Clock interface {
	// Now is the clock's current time, seconds since run start.
	Now() float64
	// WaitUntil returns once Now() >= t: a virtual clock jumps, a wall clock
	// sleeps. The world calls it before applying each event due at t.
	WaitUntil(t float64)
}

// VirtualClock is a Clock that jumps: WaitUntil sets the time. Its zero
// value starts at 0.
type VirtualClock struct{ now float64 }

// Now implements Clock.
func (c *VirtualClock) Now() float64 { return c.now }

// WaitUntil implements Clock; a t in the past leaves the clock unchanged.
func (c *VirtualClock) WaitUntil(t float64) {
	if t > c.now {
		c.now = t
	}
}
