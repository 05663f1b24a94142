package standin

import (
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
)

// TestNetnsListenerReachableFromRoot: a listener opened inside the
// namespace answers a client in the root namespace (where the API server
// runs) at a global-unicast address, and Close removes the namespace.
func TestNetnsListenerReachableFromRoot(t *testing.T) {
	tooltest.Require(t, NetnsAvailable())
	n, err := NewNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !n.Prefix.Addr().IsGlobalUnicast() || n.Prefix.Addr().IsLoopback() {
		t.Fatalf("prefix %s: the pod proxy needs a global unicast address", n.Prefix)
	}
	a, err := n.AddAddr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.Listen(netip.AddrPortFrom(a, 8080))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "in "+n.Name) })}
	go srv.Serve(l)
	defer srv.Close()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + netip.AddrPortFrom(a, 8080).String() + "/")
	if err != nil {
		t.Fatalf("GET from the root namespace: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "in "+n.Name {
		t.Errorf("body %q", body)
	}
	// The same port on the root namespace's side is not that listener.
	if _, err := c.Get("http://" + netip.AddrPortFrom(n.Gateway(), 8080).String() + "/"); err == nil {
		t.Errorf("the gateway address answered: the listener is not inside the namespace")
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, n.Name)); !os.IsNotExist(err) {
		t.Errorf("netns %s still there after Close: %v", n.Name, err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
