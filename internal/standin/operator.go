package standin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fiomig/fiomig/sim"
)

// vmState is the stand-in operator's record of one VolumeMigration.
type vmState struct {
	ns, name string
	uid      types.UID
	simID    string
	nqn      string
	source   string // source node UUID
	targets  []string
	consumer []string          // consumer hosts (validation Job nodes)
	jobs     map[string]string // Job name -> node
	mine     map[string]bool   // Jobs the operator itself deleted
	phase    string
	aborted  bool // spec.abort handed to the simulator
	gone     bool // the object was deleted
}

func metaOf(obj any) (metav1.Object, bool) {
	m, err := meta.Accessor(obj)
	return m, err == nil
}

// reconcileMigrations is the operator's reconcile of VolumeMigration
// objects: a new one starts a simulated migration to its target node; a
// spec.abort is handed to the simulator; a vanished one is forgotten.
func (s *StandIn) reconcileMigrations() {
	seen := map[types.UID]bool{}
	for _, o := range s.vmInf.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		seen[u.GetUID()] = true
		key := "volumemigration " + u.GetNamespace() + "/" + u.GetName()
		st := s.vms[u.GetUID()]
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		abort, _, _ := unstructured.NestedBool(u.Object, "spec", "abort")
		if st == nil {
			if phase == sim.PhaseCompleted || phase == sim.PhaseFailed || phase == sim.PhaseAborted {
				continue // terminal before this operator saw it
			}
			st = &vmState{ns: u.GetNamespace(), name: u.GetName(), uid: u.GetUID(), jobs: map[string]string{}, mine: map[string]bool{}}
			s.vms[u.GetUID()] = st
			if abort {
				// No migration exists yet: Aborted at once (reconcileAbort
				// with no migrationUUID, research/upstream.md §2.2).
				st.phase = sim.PhaseAborted
				s.setErr(key, s.patchStatus(st, map[string]any{"phase": sim.PhaseAborted, "errorMessage": "aborted before the migration started",
					"completedAt": now()}))
				continue
			}
			if err := s.startMigration(u, st); err != nil {
				st.phase = sim.PhaseFailed
				s.setErr(key, s.patchStatus(st, map[string]any{"phase": sim.PhaseFailed, "errorMessage": err.Error(), "completedAt": now()}))
				continue
			}
			s.setErr(key, nil)
		}
		if abort && !st.aborted && st.simID != "" && !isTerminal(st.phase) {
			s.mu.Lock()
			err := s.w.AbortMigrationReason(st.simID, "aborted: spec.abort set")
			s.mu.Unlock()
			s.wakeWorld()
			switch {
			case err == nil:
				st.aborted = true
				s.logf("%s: spec.abort handed to the simulator", key)
			case strings.Contains(err.Error(), "already"):
				st.aborted = true
			default:
				// Cutover in progress: the operator retries until terminal.
				s.setErr(key+" abort", err)
			}
		}
	}
	for uid, st := range s.vms {
		if !seen[uid] && !st.gone {
			st.gone = true
			delete(s.errs, "volumemigration "+st.ns+"/"+st.name)
			// The garbage collector's part: the Jobs it owned go with it.
			s.deleteJobs(st)
			if st.simID == "" || isTerminal(st.phase) {
				delete(s.vms, uid)
			}
		}
	}
}

func isTerminal(phase string) bool {
	return phase == sim.PhaseCompleted || phase == sim.PhaseFailed || phase == sim.PhaseAborted
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

// startMigration resolves the PV and the target node of a new
// VolumeMigration and starts the simulated migration (reconcileStart).
func (s *StandIn) startMigration(u *unstructured.Unstructured, st *vmState) error {
	pvName, _, _ := unstructured.NestedString(u.Object, "spec", "pvName")
	target, _, _ := unstructured.NestedString(u.Object, "spec", "targetNodeUUID")
	o, ok, _ := s.pvInf.GetStore().GetByKey(pvName)
	if !ok {
		return fmt.Errorf("PersistentVolume %q not found", pvName)
	}
	pv := o.(*corev1.PersistentVolume)
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != Provisioner {
		return fmt.Errorf("PersistentVolume %q is not a %s volume", pvName, Provisioner)
	}
	parts := strings.Split(pv.Spec.CSI.VolumeHandle, ":")
	if len(parts) != 3 {
		return fmt.Errorf("PersistentVolume %q: volume handle %q is not <cluster>:<pool>:<volume>", pvName, pv.Spec.CSI.VolumeHandle)
	}
	dst := -1
	for _, n := range s.nodes {
		if n.uuid == target {
			dst = n.idx
		}
	}
	if dst < 0 {
		return fmt.Errorf("target node %q is not a storage node of the cluster", target)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var vol *sim.Volume
	for _, v := range s.w.Volumes() {
		if VolumeUUID(v.NQN) == parts[2] {
			vol = v
		}
	}
	if vol == nil {
		return fmt.Errorf("volume %s of PersistentVolume %q not found", parts[2], pvName)
	}
	// lvstore i's primary is node i (sim.buildTopology).
	id, err := s.w.StartMigrationTo(vol.NQN, dst)
	if err != nil {
		return err
	}
	st.simID, st.nqn, st.source = id, vol.NQN, NodeUUID(vol.LVS)
	for _, h := range vol.Consumers {
		st.consumer = append(st.consumer, s.w.Hosts()[h].Name)
	}
	s.bySimID[id] = st
	s.wakeWorld()
	s.logf("volumemigration %s/%s: simulated migration %s of %s to %s", st.ns, st.name, id, vol.Name, s.nodes[dst].name)
	return nil
}

// worldEvents turns the simulator's phase events into VolumeMigration
// status, and creates and deletes the validation Jobs as the operator does.
func (s *StandIn) worldEvents(evs []sim.Event) {
	for _, e := range evs {
		if e.Kind != sim.EventPhase {
			continue
		}
		st := s.bySimID[e.Migration]
		if st == nil {
			continue
		}
		st.phase = e.Phase
		if e.Phase == sim.PhasePending {
			st.targets = e.TargetEndpoints
		}
		if st.gone {
			if isTerminal(e.Phase) {
				delete(s.vms, st.uid)
				delete(s.bySimID, st.simID)
			}
			continue
		}
		status := map[string]any{"phase": e.Phase}
		switch e.Phase {
		case sim.PhaseValidating:
			status["migrationUUID"] = migrationUUID(st.simID)
			status["clusterUUID"] = sim.ClusterUUID
			status["volumeUUID"] = VolumeUUID(st.nqn)
			status["poolUUID"] = PoolUUID
			status["subsystemNQN"] = st.nqn
			status["sourceNodeUUID"] = st.source
			s.mu.Lock()
			v, _ := s.w.Volume(st.nqn)
			status["memberCount"] = int64(len(v.NSIDs))
			s.mu.Unlock()
			status["startedAt"] = now()
			var conns, jobs []any
			for _, ep := range st.targets {
				ip, port, _ := strings.Cut(ep, ":")
				var p int64
				fmt.Sscan(port, &p)
				conns = append(conns, map[string]any{"nqn": st.nqn, "ip": ip, "port": p, "transport": "tcp",
					"ctrlLossTmo": int64(60), "reconnectDelay": int64(2), "fastIOFailTmo": int64(8), "keepAliveTmo": int64(4)})
			}
			for _, host := range st.consumer {
				name := jobName("vmig-validate-", migrationUUID(st.simID), host)
				if err := s.createJob(st, name, host, conns); err != nil {
					s.setErr("job "+st.ns+"/"+name, err)
				}
				st.jobs[name] = host
				jobs = append(jobs, map[string]any{"node": host, "jobName": name, "succeeded": false})
			}
			status["connections"], status["validationJobs"] = conns, jobs
		case sim.PhaseRunning:
			s.deleteJobs(st)
			status["connections"], status["validationJobs"] = nil, nil
		case sim.PhaseCompleted, sim.PhaseFailed, sim.PhaseAborted:
			s.deleteJobs(st)
			status["connections"], status["validationJobs"] = nil, nil
			status["completedAt"] = now()
			if e.Phase != sim.PhaseCompleted {
				status["errorMessage"] = e.Reason
			}
		}
		s.setErr("volumemigration "+st.ns+"/"+st.name, s.patchStatus(st, status))
		s.logf("volumemigration %s/%s (%s): %s %s", st.ns, st.name, st.simID, e.Phase, e.Reason)
		if isTerminal(e.Phase) {
			delete(s.bySimID, st.simID)
		}
	}
}

func (s *StandIn) patchStatus(st *vmState, status map[string]any) error {
	data, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	ctx, cancel := s.call()
	defer cancel()
	_, err = s.dyn.Resource(VolumeMigrationGVR).Namespace(st.ns).Patch(ctx, st.name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// migrationUUID is the control plane's migration id the stand-in reports
// for simulated migration id (mig-0001 -> ...-000000000001).
func migrationUUID(simID string) string {
	var n int64
	fmt.Sscanf(simID, "mig-%d", &n)
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", 0x40000, n)
}

var notNameChar = regexp.MustCompile(`[^a-z0-9-]`)

// jobName is the operator's path Job name (research/upstream.md §2.3):
// prefix + migration UUID without dashes cut to 20 + "-" + the node's short
// name (lower-cased, [a-z0-9-] only, cut to 16) + "-" + the first 4 bytes
// of sha256(node) in hex.
func jobName(prefix, migUUID, node string) string {
	short, _, _ := strings.Cut(strings.ToLower(node), ".")
	short = notNameChar.ReplaceAllString(short, "")
	if len(short) > 16 {
		short = short[:16]
	}
	sum := sha256.Sum256([]byte(node))
	id := strings.ReplaceAll(migUUID, "-", "")
	if len(id) > 20 {
		id = id[:20]
	}
	if short == "" {
		return prefix + id + "-" + hex.EncodeToString(sum[:6])
	}
	return prefix + id + "-" + short + "-" + hex.EncodeToString(sum[:4])
}

// createJob creates a validation Job object as the operator does (owned by
// the VolumeMigration, pinned to the consumer node). No Job controller
// runs: it gets no pod; the simulator plays what its pod would do.
func (s *StandIn) createJob(st *vmState, name, host string, conns []any) error {
	connJSON, _ := json.Marshal(conns)
	zero, deadline, ttl := int32(0), int64(180), int32(3600)
	yes, no := true, false
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: st.ns,
			Labels: map[string]string{"app.kubernetes.io/name": "simplyblock-rebalancer", "storage.simplyblock.io/volumemigration": st.name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "storage.simplyblock.io/v1alpha1", Kind: "VolumeMigration",
				Name: st.name, UID: st.uid, Controller: &yes, BlockOwnerDeletion: &no}}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &zero, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true,
				NodeSelector: map[string]string{LabelHostname: host},
				Containers: []corev1.Container{{Name: "nvme-validate", Image: "docker.io/simplyblock/simplyblock-rebalancer:main",
					ImagePullPolicy: corev1.PullAlways, Command: []string{"simplyblock-rebalancer", "--mode=validate-migration"},
					SecurityContext: &corev1.SecurityContext{Privileged: &yes},
					Env: []corev1.EnvVar{{Name: "VMIG_CONNECTIONS", Value: string(connJSON)}, {Name: "VMIG_SUBSYSTEM_NQN", Value: st.nqn},
						{Name: "VMIG_SYS_ROOT", Value: "/host/sys"}}}},
			}},
		},
	}
	ctx, cancel := s.call()
	defer cancel()
	_, err := s.cs.BatchV1().Jobs(st.ns).Create(ctx, job, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// deleteJobs deletes the migration's validation Jobs (the operator's own
// deletion, not a kill).
func (s *StandIn) deleteJobs(st *vmState) {
	for name := range st.jobs {
		st.mine[name] = true
		bg := metav1.DeletePropagationBackground
		ctx, cancel := s.call()
		err := s.cs.BatchV1().Jobs(st.ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			s.setErr("job "+st.ns+"/"+name, err)
		}
	}
	st.jobs = map[string]string{}
}

// jobGone handles a deleted Job: a validation Job deleted by someone else
// while its migration validates kills the Job in the simulator.
func (s *StandIn) jobGone(ns, name string) {
	for _, st := range s.vms {
		if st.ns != ns {
			continue
		}
		if st.mine[name] {
			delete(st.mine, name)
			return
		}
		host, ok := st.jobs[name]
		if !ok {
			continue
		}
		delete(st.jobs, name)
		s.mu.Lock()
		ev, err := s.w.KillValidationJob(st.simID, host)
		s.mu.Unlock()
		s.wakeWorld()
		s.logf("validation Job %s/%s deleted: simulator kill on %s: %v %v", ns, name, host, ev, err)
		return
	}
}
