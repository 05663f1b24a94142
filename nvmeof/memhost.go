package nvmeof

import "fmt"

// MemHost is an in-memory Host over a HostState: tests use it to drive
// releases and reaps, and the CLI uses it for captures (always dry-run).
// Connect adds a live controller with no legs; Disconnect removes one. Not
// safe for concurrent use.
type MemHost struct {
	State   HostState
	HostNQN string // stamped on controllers Connect creates
	// DisconnectErr injects failures: Disconnect of a named controller
	// returns its error and leaves the controller in place.
	DisconnectErr map[string]error
	// Disconnected records every successful Disconnect call, in order
	// (already-gone controllers included).
	Disconnected []string
}

var _ Host = (*MemHost)(nil)

// Read returns a deep copy of m.State.
func (m *MemHost) Read() (HostState, error) { return m.State.Clone(), nil }

// Connect adds a live controller for t with no legs, at the next free
// controller instance, in the first subsystem with t.NQN (or a new one).
// It fails with ErrAlreadyConnected as the kernel would (AlreadyConnected).
func (m *MemHost) Connect(t Target) (string, error) {
	if c, ok := AlreadyConnected(m.State, t); ok {
		return "", fmt.Errorf("connect %s at %s: %w by %s", t.NQN, t.Endpoint(), ErrAlreadyConnected, c.Name)
	}
	m.State = m.State.Clone() // never write into a HostState the caller shares
	next, nextSub := 0, 0
	for _, s := range m.State.Subsystems {
		nextSub = max(nextSub, s.Instance+1)
		for _, c := range s.Controllers {
			next = max(next, c.Instance+1)
		}
	}
	hostNQN := t.HostNQN
	if hostNQN == "" {
		hostNQN = m.HostNQN
	}
	c := Controller{
		Name: fmt.Sprintf("nvme%d", next), Instance: next, State: StateLive, Transport: t.transport(),
		Address: Address{Traddr: t.Traddr, Trsvcid: t.Trsvcid, HostTraddr: t.HostTraddr, HostIface: t.HostIface},
		NQN:     t.NQN, HostNQN: hostNQN, HostID: t.HostID,
	}
	for i := range m.State.Subsystems {
		if s := &m.State.Subsystems[i]; s.NQN == t.NQN {
			s.Controllers = append(s.Controllers, c)
			return c.Name, nil
		}
	}
	m.State.Subsystems = append(m.State.Subsystems, Subsystem{Instance: nextSub, NQN: t.NQN, Controllers: []Controller{c}})
	return c.Name, nil
}

// Disconnect removes the named controller; one that is not there is already
// gone and not an error. An injected DisconnectErr is returned instead.
func (m *MemHost) Disconnect(name string) error {
	if err := m.DisconnectErr[name]; err != nil {
		return err
	}
	m.State = m.State.Clone() // never write into a HostState the caller shares
	for i := range m.State.Subsystems {
		s := &m.State.Subsystems[i]
		for j, c := range s.Controllers {
			if c.Name == name {
				s.Controllers = append(s.Controllers[:j:j], s.Controllers[j+1:]...)
				break
			}
		}
	}
	m.Disconnected = append(m.Disconnected, name)
	return nil
}

// Clone returns a deep copy of h.
func (h HostState) Clone() HostState {
	out := HostState{Subsystems: make([]Subsystem, len(h.Subsystems))}
	for i, s := range h.Subsystems {
		s.Namespaces = append([]Namespace(nil), s.Namespaces...)
		if s.Controllers != nil {
			cs := make([]Controller, len(s.Controllers))
			for j, c := range s.Controllers {
				c.Legs = append([]Leg(nil), c.Legs...)
				cs[j] = c
			}
			s.Controllers = cs
		}
		out.Subsystems[i] = s
	}
	if h.Subsystems == nil {
		out.Subsystems = nil
	}
	return out
}
