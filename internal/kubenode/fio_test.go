package kubenode

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fiomig/fiomig/workload"
)

// switchPaths is a workload.Paths whose one state the test sets (the
// simulator's multipath head plays this part in a run).
type switchPaths struct {
	mu      sync.Mutex
	state   workload.IOState
	changed chan struct{}
}

func (p *switchPaths) State(string) (workload.IOState, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state, p.changed
}

func (p *switchPaths) set(s workload.IOState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = s
	close(p.changed)
	p.changed = make(chan struct{})
}

// TestFioStallsOnARealPod: real fio (the fio image) in a real pod writes
// a simulated volume — a file of the FUSE volumes --workload=fio uses,
// mounted under BaseDir and given to the pod as a hostPath
// PersistentVolume bound to its PVC — and its I/O stalls while the
// volume's head has no usable path: held for holdS seconds mid-run, fio's
// longest write latency is at least holdS (and fio reports no error).
func TestFioStallsOnARealPod(t *testing.T) {
	opts := testOptions(t)
	ctx := context.Background()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := c.Remaining(); len(left) > 0 {
			t.Errorf("left after Close:\n%s", strings.Join(left, "\n"))
		}
	}()
	paths := &switchPaths{state: workload.Serve, changed: make(chan struct{})}
	mnt := filepath.Join(BaseDir, "volumes", "mnt")
	vfs, err := workload.Mount(workload.MountOptions{Dir: mnt, BackingDir: filepath.Join(BaseDir, "volumes", "backing"), Paths: paths},
		[]workload.Volume{{Name: "vol-1", Size: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		paths.set(workload.Serve)
		if err := vfs.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	}()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := corev1.HostPathDirectory
	empty := ""
	size := resource.MustParse("64Mi")
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: mnt, Type: &dir}},
			StorageClassName:       ""},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty, VolumeName: "vol-1",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const holdS = 2.0
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fio", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "fio", Image: c.Images["fio"], ImagePullPolicy: corev1.PullNever,
				Command: []string{"fio", "--name=vol-1", "--filename=/data/vol-1", "--rw=randwrite", "--bs=4k", "--direct=1",
					"--ioengine=psync", "--size=16m", "--time_based", "--runtime=10", "--output-format=json"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "vol-1"}}}}},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Hold the volume once fio is writing, for holdS seconds.
	deadline := time.Now().Add(2 * time.Minute)
	for vfs.Counters("vol-1").Completed < 100 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if vfs.Counters("vol-1").Completed < 100 {
		logPods(t, c, cs)
		t.Fatalf("fio wrote %d times in 2 min", vfs.Counters("vol-1").Completed)
	}
	paths.set(workload.Wait)
	time.Sleep(time.Duration(holdS * float64(time.Second)))
	held := vfs.Counters("vol-1")
	paths.set(workload.Serve)
	if held.Waiting == 0 {
		t.Errorf("no I/O was waiting at the end of the hold: %+v", held)
	}
	logPods(t, c, cs)
	phase, out := waitPod(ctx, t, cs, "default", "fio")
	if phase != corev1.PodSucceeded {
		t.Fatalf("fio pod %s:\n%s", phase, out)
	}
	var res struct {
		Jobs []struct {
			Error int `json:"error"`
			Write struct {
				TotalIOs int64 `json:"total_ios"`
				ClatNs   struct {
					Max float64 `json:"max"`
				} `json:"clat_ns"`
			} `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil || len(res.Jobs) != 1 {
		t.Fatalf("fio's JSON: %v (%d jobs):\n%s", err, len(res.Jobs), out)
	}
	j := res.Jobs[0]
	maxS := j.Write.ClatNs.Max / 1e9
	t.Logf("fio in the pod: %d writes, longest %.3f s (held %.1f s; FUSE: %+v)", j.Write.TotalIOs, maxS, holdS, vfs.Counters("vol-1"))
	if j.Error != 0 || j.Write.TotalIOs == 0 {
		t.Errorf("fio: error %d, %d writes", j.Error, j.Write.TotalIOs)
	}
	if maxS < holdS || maxS > holdS+5 {
		t.Errorf("fio's longest write %.3f s, want the hold of %.1f s (and at most 5 s more)", maxS, holdS)
	}
}

// waitPod waits (up to 2 min) for a pod to end and returns its phase and
// log.
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) (corev1.PodPhase, string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var phase corev1.PodPhase
	for time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase = p.Status.Phase; phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Errorf("logs of %s: %v", name, err)
	}
	return phase, string(b)
}
