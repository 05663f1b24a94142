package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/backend/kube"
)

// fakeNFT puts an nft(8) on PATH that lists three inet tables and logs
// every call, so the sweep is tested as a process calling nft.
func fakeNFT(t *testing.T) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$@" >>` + log + `
case "$*" in
"-j list tables") echo '{"nftables":[{"metainfo":{"version":"1.0.6"}},{"table":{"family":"inet","name":"fiomig_1_dead","handle":1}},{"table":{"family":"inet","name":"fiomig_2_live","handle":2}},{"table":{"family":"ip","name":"fiomig_3_ip","handle":3}},{"table":{"family":"inet","name":"filter","handle":4}}]}' ;;
"delete table inet "*) ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "nft"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func TestSweepDeletesOnlyDeadRunsTables(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	log := fakeNFT(t)
	removed, err := sweepTables(context.Background(), "fiomig_", map[string]bool{"fiomig_2_live": true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"fiomig_1_dead"}) {
		t.Errorf("removed %v, want [fiomig_1_dead] (live kept, other families and names untouched)", removed)
	}
	b, _ := os.ReadFile(log)
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !slices.Equal(calls, []string{"-j list tables", "delete table inet fiomig_1_dead"}) {
		t.Errorf("nft calls %q", calls)
	}
}

func TestNFTHelperNeedsItsFlags(t *testing.T) {
	var out, errb strings.Builder
	if code := nftHelperCmd([]string{"--table", "t"}, &out, &errb); code != exitUsage {
		t.Errorf("exit %d, want %d (%s)", code, exitUsage, errb.String())
	}
	if !strings.Contains(errb.String(), "--ip") {
		t.Errorf("stderr %q does not name the missing flags", errb.String())
	}
}

func TestAgentRefusesAMissingSysfs(t *testing.T) {
	var out, errb strings.Builder
	code := agentCmd([]string{"--sys", filepath.Join(t.TempDir(), "none"), "--hostnqn", "nqn.x", "--node", "n"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "--sys") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestRunKubeWithoutTheSecretNamesIt: with neither --cluster-secret-file
// nor $FIOMIG_CLUSTER_SECRET, fiomig run --backend kube exits 2 before it
// touches the cluster, with one line naming the missing credential.
func TestRunKubeWithoutTheSecretNamesIt(t *testing.T) {
	t.Setenv(kube.SecretEnv, "")
	code, _, stderr := runCLI("run", "--backend", "kube", "--kubeconfig", filepath.Join(t.TempDir(), "no-such-kubeconfig"),
		"--storage-class", "sc", "--out", t.TempDir())
	if code != exitUsage {
		t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "cluster secret") || !strings.Contains(lines[0], "--cluster-secret-file") || !strings.Contains(lines[0], kube.SecretEnv) {
		t.Errorf("stderr %q: want one line naming the cluster secret, --cluster-secret-file and $%s", stderr, kube.SecretEnv)
	}
	empty := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if code, _, stderr := runCLI("run", "--backend", "kube", "--kubeconfig", "kc", "--storage-class", "sc", "--cluster-secret-file", empty, "--out", t.TempDir()); code != exitUsage || !strings.Contains(stderr, "is empty") {
		t.Errorf("empty secret file: exit %d, %q", code, stderr)
	}
}
