package backend

import "github.com/fiomig/fiomig/nvmeof"

// HostReader reads hosts' NVMe state (nvmeof.ReadHost over Sysfs), parsing
// a Versioned host's tree again only when its Version changed: an
// unchanged tree is not parsed twice (issue 15). A host that is not
// Versioned is parsed at every Read; a backend whose hosts can tell cheaply
// that nothing changed (a hash of an agent's capture, say) implements
// Versioned to get the same. The zero value is ready; one reader per
// caller, driven by one goroutine.
type HostReader struct {
	last map[string]versionedState // by host name
}

type versionedState struct {
	version uint64
	state   nvmeof.HostState
}

// Read returns h's state and whether it is the one returned for h's
// previous Read (a Versioned host whose Version did not change). The state
// may be shared with earlier calls: read it, never modify it.
func (r *HostReader) Read(h Host) (nvmeof.HostState, bool, error) {
	v, versioned := h.(Versioned)
	if versioned {
		if prev, ok := r.last[h.Name()]; ok && prev.version == v.Version() {
			return prev.state, true, nil
		}
	}
	hs, err := nvmeof.ReadHost(h.Sysfs(), h.HostNQN())
	if err != nil {
		return hs, false, err
	}
	if versioned {
		if r.last == nil {
			r.last = map[string]versionedState{}
		}
		r.last[h.Name()] = versionedState{version: v.Version(), state: hs}
	}
	return hs, false, nil
}
