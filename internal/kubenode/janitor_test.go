package kubenode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// helperEnv makes the test binary a cluster process for the janitor
// tests (TestMain).
const helperEnv = "FIOMIG_KUBENODE_HELPER"

// TestMain makes the test binary a cluster process when helperEnv is set
// (the janitor tests' child): it starts a one-node cluster with a running
// pod, prints "ready", and on SIGINT closes the cluster and exits.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperCluster())
	}
	os.Exit(m.Run())
}

func helperCluster() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts, err := repoOptions()
	if err == nil {
		err = Available(opts)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	c, err := Start(ctx, opts)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	cs, _ := kubernetes.NewForConfig(c.Config)
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sleep", Image: c.Images["fio"],
			ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}},
	}, metav1.CreateOptions{})
	for err == nil && ctx.Err() == nil {
		var p *corev1.Pod
		if p, err = cs.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{}); err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		fmt.Println("error:", err)
		c.Close()
		return 2
	}
	fmt.Println("ready")
	<-ctx.Done()
	if _, err := c.Close(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// startHelper runs the test binary as a cluster process (TestMain) and
// waits for its "ready".
func startHelper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); l == "ready" || strings.HasPrefix(l, "error:") {
				ready <- l
			}
		}
		close(ready)
	}()
	select {
	case l := <-ready:
		if l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("cluster process: %q", l)
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("cluster process not ready after 5 min")
	}
	return cmd
}

// TestSIGINTLeavesNothing: a cluster process stopped by SIGINT with a pod
// running tears everything down itself.
func TestSIGINTLeavesNothing(t *testing.T) {
	testOptions(t)
	before := mustSnapshot(t)
	cmd := startHelper(t)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("cluster process after SIGINT: %v", err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("cluster process still running 2 min after SIGINT")
	}
	if left := Leftovers(before); len(left) > 0 {
		t.Errorf("left after SIGINT:\n%s", strings.Join(left, "\n"))
		Janitor(time.Minute, t.Logf)
	}
}

// TestJanitorAfterSIGKILL: a cluster process killed with SIGKILL leaves
// containers, shims, mounts and namespaces behind (the evidence that the
// test can fail); Janitor removes all of it.
func TestJanitorAfterSIGKILL(t *testing.T) {
	testOptions(t)
	before := mustSnapshot(t)
	cmd := startHelper(t)
	cmd.Process.Kill()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("cluster process: %v, want killed", err)
	}
	left := Leftovers(before)
	if len(left) == 0 {
		t.Error("a SIGKILLed cluster left nothing: the janitor has nothing to prove")
	}
	t.Logf("left by the killed cluster: %d things, e.g. %s", len(left), strings.Join(left[:min(5, len(left))], "; "))
	did, err := Janitor(time.Minute, t.Logf)
	if err != nil {
		t.Errorf("Janitor: %v", err)
	}
	t.Logf("Janitor removed: %s", strings.Join(did, ", "))
	if left := Leftovers(before); len(left) > 0 {
		t.Errorf("left after Janitor:\n%s", strings.Join(left, "\n"))
	}
}

func mustSnapshot(t *testing.T) Snapshot {
	t.Helper()
	s, err := TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
