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
	image    string // the validation Jobs' image (the StorageCluster's rebalancerImage)
	aborted  bool   // spec.abort handed to the simulator
	gone     bool   // the object was deleted
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
				// No migration exists yet: Aborted at once, with
				// completedAt and no errorMessage (simplyblock-operator
				// volumemigration_controller.go reconcileAbort).
				st.phase = sim.PhaseAborted
				s.setErr(key, s.patchStatus(st, map[string]any{"phase": sim.PhaseAborted, "completedAt": now()}))
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

// defaultRebalancerImage is the validation Jobs' image when the
// StorageCluster pins none (simplyblock-operator
// volumemigration_controller.go defaultRebalancerImage).
const defaultRebalancerImage = "docker.io/simplyblock/simplyblock-rebalancer:main"

// rebalancerImage is resolveRebalancerImage: the StorageCluster in the
// VolumeMigration's own namespace ns whose status.uuid is clusterUUID
// decides — none there, or volumeMigrationSettings.enabled false, is an
// error (the caller fails the migration with the operator's message);
// else its rebalancerImage or the default.
func (s *StandIn) rebalancerImage(ns, clusterUUID string) (string, error) {
	for _, o := range s.scInf.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		if u.GetNamespace() != ns {
			continue
		}
		if id, _, _ := unstructured.NestedString(u.Object, "status", "uuid"); id != clusterUUID {
			continue
		}
		if on, found, _ := unstructured.NestedBool(u.Object, "spec", "volumeMigrationSettings", "enabled"); found && !on {
			return "", fmt.Errorf("volume migration is disabled for cluster UUID %q", clusterUUID)
		}
		if img, _, _ := unstructured.NestedString(u.Object, "spec", "volumeMigrationSettings", "rebalancerImage"); img != "" {
			return img, nil
		}
		return defaultRebalancerImage, nil
	}
	return "", fmt.Errorf("no StorageCluster found for cluster UUID %q", clusterUUID)
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
	parts := strings.SplitN(pv.Spec.CSI.VolumeHandle, ":", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("PV %q has unexpected CSI volume handle format %q (expected <clusterUUID>:<poolUUID>:<volumeUUID>)", pvName, pv.Spec.CSI.VolumeHandle)
	}
	image, err := s.rebalancerImage(st.ns, parts[0])
	if err != nil {
		return fmt.Errorf("volume migration not enabled/configured for cluster %q: %v", parts[0], err)
	}
	st.image = image
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
			// sourceNodeUUID comes only with Running (reconcileStart:
			// "populated from GetMigration once status=Running").
			status["memberCount"] = s.memberCount(st)
			status["startedAt"] = now()
			var conns, jobs []any
			for _, ep := range st.targets {
				ip, port, _ := strings.Cut(s.dataEndpoint(ep), ":")
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
			s.endJobs(st, "0")
			status["connections"], status["validationJobs"] = nil, nil
			// reconcileRunning's progress fields, from GetMigration.
			status["sourceNodeUUID"] = st.source
			status["memberCount"] = s.memberCount(st)
		case sim.PhaseCompleted, sim.PhaseFailed, sim.PhaseAborted:
			s.endJobs(st, "1")
			status["connections"], status["validationJobs"] = nil, nil
			status["completedAt"] = now()
			// Failed carries the reason; Aborted none (reconcileAbort
			// sets phase and completedAt only).
			if e.Phase == sim.PhaseFailed {
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

// memberCount is the number of volumes of the migrated subsystem.
func (s *StandIn) memberCount(st *vmState) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _ := s.w.Volume(st.nqn)
	return int64(len(v.NSIDs))
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

// jobName is the operator's path Job name (docs/sources.md §5.3):
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

// createJob creates a validation Job object as the operator's
// migrationPathJob builds it (simplyblock-operator
// volumemigration_controller.go): in the VolumeMigration's namespace, no
// labels, the VolumeMigration as controller owner (Controller and
// BlockOwnerDeletion true, metav1.NewControllerRef), nodeSelector
// kubernetes.io/hostname, hostNetwork, one privileged container
// nvme-validate of the rebalancer image with host /dev and /sys mounted,
// backoffLimit 0, ttlSecondsAfterFinished 3600, activeDeadlineSeconds 180.
// No Job controller runs: it gets no pod; the simulator plays what its pod
// would do.
func (s *StandIn) createJob(st *vmState, name, host string, conns []any) error {
	connJSON, _ := json.Marshal(conns)
	backoff, ttl, deadline := int32(0), int32(3600), int64(180)
	yes := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: st.ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "storage.simplyblock.io/v1alpha1", Kind: "VolumeMigration",
				Name: st.name, UID: st.uid, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff, TTLSecondsAfterFinished: &ttl, ActiveDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true,
				NodeSelector: map[string]string{LabelHostname: host},
				Volumes: []corev1.Volume{
					{Name: "host-dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev"}}},
					{Name: "host-sys", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys"}}},
				},
				Containers: []corev1.Container{{Name: "nvme-validate", Image: st.image,
					ImagePullPolicy: corev1.PullAlways, Command: []string{"simplyblock-rebalancer", "--mode=validate-migration"},
					Env: []corev1.EnvVar{{Name: "VMIG_CONNECTIONS", Value: string(connJSON)}, {Name: "VMIG_SUBSYSTEM_NQN", Value: st.nqn},
						{Name: "VMIG_SYS_ROOT", Value: "/host/sys"}},
					SecurityContext: &corev1.SecurityContext{Privileged: &yes},
					VolumeMounts: []corev1.VolumeMount{{Name: "host-dev", MountPath: "/dev"},
						{Name: "host-sys", MountPath: "/host/sys", ReadOnly: true}}}},
			}},
		},
	}
	if s.real != nil {
		// The rebalancer is played: the container (the StorageCluster's
		// rebalancerImage, which the nodes have; no pull) asks the
		// stand-in for the outcome the simulated validation decides.
		c := &job.Spec.Template.Spec.Containers[0]
		c.ImagePullPolicy = corev1.PullNever
		c.Command = []string{"sh", "-c", validationScript()}
		c.Env = append(c.Env, corev1.EnvVar{Name: "VMIG_JOB", Value: name},
			corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
		s.setOutcome(name, "")
	}
	ctx, cancel := s.call()
	defer cancel()
	_, err := s.cs.BatchV1().Jobs(st.ns).Create(ctx, job, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// endJobs ends the migration's validation Jobs: beside real kubelets
// their pods are told the outcome (exit code code) and the Jobs deleted
// 3 s later, time for the pods to exit with it; else deleted now.
func (s *StandIn) endJobs(st *vmState, code string) {
	if s.real == nil || len(st.jobs) == 0 {
		s.deleteJobs(st)
		return
	}
	later := &vmState{ns: st.ns, jobs: st.jobs, mine: st.mine}
	for name := range st.jobs {
		s.setOutcome(name, code)
		st.mine[name] = true
	}
	st.jobs = map[string]string{}
	time.AfterFunc(3*time.Second, func() { s.post(func() { s.deleteJobs(later) }) })
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
