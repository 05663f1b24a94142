package framework

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodWhy: the reason StartKubeNode's timeout names for an agent pod
// that is not Ready is the one kubectl describe would show, and a Ready
// pod has none.
func TestPodWhy(t *testing.T) {
	ready := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if got := podWhy(ready); got != "" {
		t.Errorf("podWhy(Ready pod) = %q, want empty", got)
	}
	waiting := &corev1.Pod{Status: corev1.PodStatus{
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: "containers with unready status: [agent]"}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: "mount /host/sys: no such file"}}},
			{Name: "side", RestartCount: 3, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}}
	got := podWhy(waiting)
	for _, want := range []string{"Ready: containers with unready status: [agent]", "container agent waiting: CreateContainerError mount /host/sys: no such file", "container side restarted 3 times"} {
		if !strings.Contains(got, want) {
			t.Errorf("podWhy = %q, want it to contain %q", got, want)
		}
	}
}
