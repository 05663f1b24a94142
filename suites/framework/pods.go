package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// SeenPod is what a PodWatch saw of one pod: where it ran and whether
// every container of it ran (Running, or terminated after it ran) in a
// container runtime, with the runtime's container IDs.
type SeenPod struct {
	Namespace, Name, Node, Kind string
	// Ran: every container reached Running (or exited after starting).
	Ran bool
	// ContainerIDs are the runtime's ids (containerd://...), by container.
	ContainerIDs map[string]string
	// Phase is the last phase seen.
	Phase corev1.PodPhase
}

// PodWatch records, every second until Stop, every pod of the cluster,
// and once Want[kind] pods of each kind run, the cluster's pods as
// `kubectl get pods -A -o wide` shows them.
type PodWatch struct {
	cs     kubernetes.Interface
	rc     rest.Interface
	Want   map[string]int
	mu     sync.Mutex
	seen   map[string]*SeenPod
	wide   string
	cancel context.CancelFunc
	done   chan struct{}
}

// PodKind names what a pod is for the kube suites: agent, fio, nft-helper,
// validation-job, spdk, webappapi, or "" for others.
func PodKind(p *corev1.Pod) string {
	switch {
	case p.Labels["app.kubernetes.io/name"] == "fiomig-agent":
		return "agent"
	case p.Labels["fiomig.io/role"] == "fio":
		return "fio"
	case p.Labels["fiomig.io/role"] == "nft-helper":
		return "nft-helper"
	case p.Labels["batch.kubernetes.io/job-name"] != "" && strings.HasPrefix(p.Labels["batch.kubernetes.io/job-name"], "vmig-validate-"):
		return "validation-job"
	case p.Labels["role"] == "simplyblock-storage-node":
		return "spdk"
	case p.Labels["app"] == "simplyblock-webappapi":
		return "webappapi"
	}
	return ""
}

// WatchPods starts a PodWatch with admin access; want says how many
// running pods of which kinds make the -o wide capture (e.g. 3 agents and
// 3 fio pods).
func WatchPods(admin *rest.Config, want map[string]int) *PodWatch {
	cs := kubernetes.NewForConfigOrDie(admin)
	ctx, cancel := context.WithCancel(context.Background())
	w := &PodWatch{cs: cs, rc: cs.CoreV1().RESTClient(), Want: want, seen: map[string]*SeenPod{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.poll(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return w
}

func (w *PodWatch) poll(ctx context.Context) {
	l, err := w.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	running := map[string]int{}
	w.mu.Lock()
	for _, p := range l.Items {
		key := p.Namespace + "/" + p.Name + "/" + string(p.UID)
		sp := w.seen[key]
		if sp == nil {
			sp = &SeenPod{Namespace: p.Namespace, Name: p.Name, Kind: PodKind(&p), ContainerIDs: map[string]string{}}
			w.seen[key] = sp
		}
		sp.Node, sp.Phase = p.Spec.NodeName, p.Status.Phase
		ran := len(p.Status.ContainerStatuses) == len(p.Spec.Containers) && len(p.Spec.Containers) > 0
		for _, c := range p.Status.ContainerStatuses {
			if c.ContainerID != "" {
				sp.ContainerIDs[c.Name] = c.ContainerID
			}
			if c.State.Running == nil && (c.State.Terminated == nil || c.State.Terminated.StartedAt.IsZero()) {
				ran = false
			}
		}
		sp.Ran = sp.Ran || ran
		if p.Status.Phase == corev1.PodRunning && ran {
			running[sp.Kind]++
		}
	}
	capture := w.wide == ""
	for k, n := range w.Want {
		capture = capture && running[k] >= n
	}
	w.mu.Unlock()
	if capture {
		if s, err := w.podsWide(ctx); err == nil {
			w.mu.Lock()
			w.wide = s
			w.mu.Unlock()
		}
	}
}

// podsWide renders the API server's table of every pod (the columns
// kubectl prints, all priorities: -o wide) with a NAMESPACE column first.
func (w *PodWatch) podsWide(ctx context.Context) (string, error) {
	raw, err := w.rc.Get().AbsPath("/api/v1/pods").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var t metav1.Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", err
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	head := []string{"NAMESPACE"}
	for _, c := range t.ColumnDefinitions {
		head = append(head, strings.ToUpper(c.Name))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	var rows []string
	for _, r := range t.Rows {
		var m metav1.PartialObjectMetadata
		json.Unmarshal(r.Object.Raw, &m)
		cells := []string{m.Namespace}
		for _, c := range r.Cells {
			cells = append(cells, fmt.Sprint(c))
		}
		rows = append(rows, strings.Join(cells, "\t"))
	}
	sort.Strings(rows)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
	return b.String(), nil
}

// Stop ends the watch.
func (w *PodWatch) Stop() {
	w.cancel()
	<-w.done
}

// Seen lists every pod seen, sorted by namespace and name.
func (w *PodWatch) Seen() []SeenPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []SeenPod
	for _, sp := range w.seen {
		c := *sp
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Wide is the -o wide capture ("" until the wanted kinds ran).
func (w *PodWatch) Wide() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wide
}
