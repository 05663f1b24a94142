package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/backend/kube/agent"
)

// The commands fiomig runs inside a Kubernetes cluster (deploy/agent/,
// and the pods backend/kube creates): agent, nft-helper, logserve. Each
// serves a small HTTP API that the harness reaches only through the API
// server's pod proxy (backend/kube/agent).

func init() {
	register(command{name: "agent", summary: "serve this host's NVMe-oF sysfs state to the harness (runs in the agent DaemonSet)", run: agentCmd})
	register(command{name: "nft-helper", summary: "drop new connections to a target port with nftables, serve the rule's counter (kube fault helper pod)", run: nftHelperCmd})
	register(command{name: "logserve", summary: "serve a directory's files read-only (the fio pod's log sidecar)", run: logserveCmd})
}

// serve runs h on listen until SIGINT/SIGTERM, then shuts down. It returns
// the process exit code.
func serve(name, listen string, h http.Handler, stderr io.Writer, onStop func()) int {
	return serveLinger(name, listen, h, stderr, onStop, 0)
}

// serveLinger is serve that keeps answering for linger after the signal.
func serveLinger(name, listen string, h http.Handler, stderr io.Writer, onStop func(), linger time.Duration) int {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig %s: %v\n", name, err)
		return exitUsage
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		time.Sleep(linger)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stderr, "fiomig %s: serving on %s\n", name, ln.Addr())
	err = srv.Serve(ln)
	if onStop != nil {
		onStop()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "fiomig %s: %v\n", name, err)
		return exitCheckFailed
	}
	return exitPass
}

func agentCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fiomig agent", flag.ContinueOnError)
	sys := fs.String("sys", "/host/sys", "`directory` where the host's /sys is mounted (read-only)")
	hostnqn := fs.String("hostnqn", "", "serve only the controllers of this host `NQN` (default: learned from the host's controllers and the Node UID the harness passes)")
	nodeUID := fs.String("node-uid", os.Getenv("NODE_UID"), "the Node's metadata.uid (default $NODE_UID; the harness passes it with every request anyway)")
	node := fs.String("node", os.Getenv("NODE_NAME"), "Kubernetes node `name` (default $NODE_NAME, from the downward API)")
	listen := fs.String("listen", fmt.Sprintf(":%d", agent.Port), "`address` to serve on")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), helpText("agent"))
		fs.PrintDefaults()
	}
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if *node == "" {
		fmt.Fprintln(stderr, "fiomig agent: no --node and $NODE_NAME is empty")
		return exitUsage
	}
	if fi, err := os.Stat(*sys); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "fiomig agent: --sys %s is not a directory\n", *sys)
		return exitUsage
	}
	h := agent.Handler(agent.Config{Node: *node, HostNQN: *hostnqn, NodeUID: *nodeUID, Sys: os.DirFS(*sys)})
	return serve("agent", *listen, h, stderr, nil)
}

func nftHelperCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fiomig nft-helper", flag.ContinueOnError)
	table := fs.String("table", "", "nftables `table` (family inet) to create; deleted again on SIGTERM")
	ip := fs.String("ip", "", "target `IP` whose new TCP connections are dropped")
	port := fs.String("port", "", "target TCP `ports`, comma-separated")
	sweep := fs.String("sweep", "", "instead: delete every inet table whose name starts with `prefix` and is not in --keep, and serve their names at GET /v1/removed")
	keep := fs.String("keep", "", "comma-separated `tables` --sweep keeps (live runs)")
	listen := fs.String("listen", fmt.Sprintf(":%d", agent.HelperPort), "`address` to serve on")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), helpText("nft-helper"))
		fs.PrintDefaults()
	}
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	ctx := context.Background()
	if *sweep != "" {
		kept := map[string]bool{}
		for _, t := range strings.Split(*keep, ",") {
			kept[strings.TrimSpace(t)] = true
		}
		removed, err := sweepTables(ctx, *sweep, kept)
		if err != nil {
			fmt.Fprintf(stderr, "fiomig nft-helper: %v\n", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/removed", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "[%s]\n", quoteJoin(removed))
		})
		return serve("nft-helper", *listen, mux, stderr, nil)
	}
	ports, perr := agent.ParsePorts(*port)
	if *table == "" || *ip == "" || perr != nil {
		fmt.Fprintln(stderr, "fiomig nft-helper: --table, --ip and --port (1-65535, comma-separated) are required (see fiomig nft-helper --help)")
		return exitUsage
	}
	n := agent.NFT{Table: *table, IP: *ip, Ports: ports}
	if err := n.Add(ctx); err != nil {
		fmt.Fprintf(stderr, "fiomig nft-helper: %v\n", err)
		return exitCheckFailed
	}
	var once sync.Once
	cleanup := func() {
		once.Do(func() {
			if err := n.Delete(context.Background()); err != nil {
				fmt.Fprintf(stderr, "fiomig nft-helper: %v\n", err)
			}
		})
	}
	h := agent.CounterHandler(func() (agent.Counter, error) { return n.Read(ctx) })
	return serve("nft-helper", *listen, h, stderr, cleanup)
}

// sweepTables deletes every inet table named prefix* not in keep.
func sweepTables(ctx context.Context, prefix string, keep map[string]bool) ([]string, error) {
	var removed []string
	n := agent.NFT{}
	out, err := n.RunNFT(ctx, "-j", "list", "tables")
	if err != nil {
		return nil, err
	}
	names, err := agent.ParseNFTTables(out, "inet")
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, t := range names {
		if !strings.HasPrefix(t, prefix) || keep[t] {
			continue
		}
		if err := (agent.NFT{Table: t}).Delete(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, t)
	}
	return removed, errors.Join(errs...)
}

func quoteJoin(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ",")
}

func logserveCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fiomig logserve", flag.ContinueOnError)
	dir := fs.String("dir", "/logs", "`directory` whose files are served read-only")
	listen := fs.String("listen", fmt.Sprintf(":%d", agent.FilesPort), "`address` to serve on")
	linger := fs.Duration("linger", 0, "keep serving this `long` after SIGTERM (the fio pod's files are fetched while it terminates)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), helpText("logserve"))
		fs.PrintDefaults()
	}
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	return serveLinger("logserve", *listen, agent.FilesHandler(os.DirFS(*dir)), stderr, nil, *linger)
}
