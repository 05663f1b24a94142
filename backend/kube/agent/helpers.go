package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// HelperPort is the nft helper's container port; FilesPort the fio pod's
// log sidecar's.
const (
	HelperPort = 9561
	FilesPort  = 9562
)

// Counter is the JSON answer of GET /v1/counter: the packets and bytes the
// helper's drop rule has counted since it was added.
type Counter struct {
	Table   string `json:"table"`
	Packets int64  `json:"packets"`
	Bytes   int64  `json:"bytes"`
}

// CounterHandler serves GET /v1/counter from read (GET /healthz answers
// ok). An error of read answers 500 with it.
func CounterHandler(read func() (Counter, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /v1/counter", func(w http.ResponseWriter, _ *http.Request) {
		c, err := read()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c)
	})
	return mux
}

// FilesHandler serves the regular files at the top of dir read-only: GET
// /v1/files lists their names (JSON array, sorted), GET /v1/files/<name>
// returns one. Names with a slash or starting with "." are refused (404).
func FilesHandler(dir fs.FS) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/files", func(w http.ResponseWriter, _ *http.Request) {
		es, err := fs.ReadDir(dir, ".")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		names := []string{}
		for _, e := range es {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(names)
	})
	mux.HandleFunc("GET /v1/files/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if strings.HasPrefix(name, ".") || !fs.ValidPath(name) || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		b, err := fs.ReadFile(dir, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	return mux
}

// NFT is the dropped-CONNECTs helper's nftables rule: in table inet Table,
// chain "input" (hook prerouting, priority -150, "mangle": after connection
// tracking at -200, without which "ct state new" matches nothing — a chain
// at -300 saw every SYN and dropped none, measured with real SYNs in a
// network namespace — and before NAT at -100 and the filter chains at 0),
// one rule "ip daddr IP tcp dport Port ct state new counter drop"
// (several ports as a set "{ P1, P2 }"; IPv6 addresses use ip6 daddr). New
// TCP connections to the target's ports are dropped, existing ones are
// untouched (faults.ConnectDropper).
type NFT struct {
	Table string
	IP    string
	Ports []int
	// Run runs nft with args; nil runs nft(8) from PATH.
	Run func(ctx context.Context, args ...string) ([]byte, error)
}

func (n NFT) run(ctx context.Context, args ...string) ([]byte, error) {
	if n.Run != nil {
		return n.Run(ctx, args...)
	}
	out, err := exec.CommandContext(ctx, "nft", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Rule is the rule's match and verdict, as nft(8) writes it.
func (n NFT) Rule() string {
	fam := "ip"
	if strings.Contains(n.IP, ":") {
		fam = "ip6"
	}
	ports := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		ports[i] = strconv.Itoa(p)
	}
	dport := strings.Join(ports, ", ")
	if len(ports) > 1 {
		dport = "{ " + dport + " }"
	}
	return fmt.Sprintf("%s daddr %s tcp dport %s ct state new counter drop", fam, n.IP, dport)
}

// Script is the nft script Add loads (one transaction).
func (n NFT) Script() string {
	return fmt.Sprintf("add table inet %s\nadd chain inet %s input { type filter hook prerouting priority -150 ; }\nadd rule inet %s input %s\n",
		n.Table, n.Table, n.Table, n.Rule())
}

// ParsePorts parses a comma-separated list of TCP ports (1-65535).
func ParsePorts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("port %q: want 1-65535", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// Add installs the table, chain and rule atomically (nft -f -).
func (n NFT) Add(ctx context.Context) error {
	if n.Run != nil {
		_, err := n.Run(ctx, "-f", "-", n.Script())
		return err
	}
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(n.Script())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f -: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Delete removes the table; a table that is not there is no error
// (recovery is idempotent).
func (n NFT) Delete(ctx context.Context) error {
	out, err := n.run(ctx, "delete", "table", "inet", n.Table)
	if err != nil && strings.Contains(string(out)+err.Error(), "No such file or directory") {
		return nil
	}
	return err
}

// Read returns the rule's counter from nft -j list table.
func (n NFT) Read(ctx context.Context) (Counter, error) {
	out, err := n.run(ctx, "-j", "list", "table", "inet", n.Table)
	if err != nil {
		return Counter{}, err
	}
	return ParseNFTCounter(out, n.Table)
}

// ParseNFTCounter sums the counters of every rule of table in the JSON of
// "nft -j list table" (libnftables-json(5): {"nftables":[{"rule":{"expr":
// [{"counter":{"packets":N,"bytes":M}}, ...]}}]}). A table with no counter
// is an error: the helper's rule is not there.
func ParseNFTCounter(b []byte, table string) (Counter, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Table string `json:"table"`
				Expr  []struct {
					Counter *struct {
						Packets int64 `json:"packets"`
						Bytes   int64 `json:"bytes"`
					} `json:"counter"`
				} `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Counter{}, fmt.Errorf("nft -j output: %w", err)
	}
	c, found := Counter{Table: table}, false
	for _, o := range doc.Nftables {
		if o.Rule == nil || o.Rule.Table != table {
			continue
		}
		for _, e := range o.Rule.Expr {
			if e.Counter != nil {
				c.Packets += e.Counter.Packets
				c.Bytes += e.Counter.Bytes
				found = true
			}
		}
	}
	if !found {
		return Counter{}, fmt.Errorf("table inet %s has no rule with a counter", table)
	}
	return c, nil
}

// RunNFT runs nft with args (n.Run when set).
func (n NFT) RunNFT(ctx context.Context, args ...string) ([]byte, error) { return n.run(ctx, args...) }

// ParseNFTTables returns the names of the tables of family in the JSON of
// "nft -j list tables".
func ParseNFTTables(b []byte, family string) ([]string, error) {
	var doc struct {
		Nftables []struct {
			Table *struct {
				Family string `json:"family"`
				Name   string `json:"name"`
			} `json:"table"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("nft -j list tables: %w", err)
	}
	var out []string
	for _, o := range doc.Nftables {
		if o.Table != nil && o.Table.Family == family {
			out = append(out, o.Table.Name)
		}
	}
	return out, nil
}
