package suites_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/record"
)

var _ = Describe("fiomig run --backend kube interrupted", Label("kube", "interrupt"), func() {
	It("removes every object of the run on SIGINT, keeps the run directory and exits 130", func(ctx SpecContext) {
		env := kubeEnv()
		root, err := kubetest.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		bin := filepath.Join(GinkgoT().TempDir(), "fiomig")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/fiomig")
		build.Dir = root
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		outDir := GinkgoT().TempDir()
		cmd := exec.CommandContext(ctx, bin, "run", "--backend", "kube", "--kubeconfig", env.Kubeconfig,
			"--storage-class", env.StandIn.StorageClass(), "--storage-namespace", env.StandIn.StorageNamespace(),
			"--volumes", "3", "--migrations", "6", "--out", outDir)
		cmd.Stderr = GinkgoWriter
		stdout, err := cmd.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		Expect(cmd.Start()).To(Succeed())
		runRE := regexp.MustCompile(`kube: run (fiomig-[0-9]+-[0-9a-f]+) in namespace`)
		var id string
		sc := bufio.NewScanner(stdout)
		deadline := time.Now().Add(3 * time.Minute)
		for sc.Scan() && time.Now().Before(deadline) {
			line := sc.Text()
			GinkgoWriter.Println(line)
			if m := runRE.FindStringSubmatch(line); m != nil {
				id = m[1]
			}
			// Mid-run: the first migration was created and is under way.
			if id != "" && regexp.MustCompile(`VolumeMigration `+id+`-mig-1`).MatchString(line) {
				time.Sleep(2 * time.Second)
				break
			}
		}
		Expect(id).NotTo(BeEmpty(), "the run never said its id")
		Expect(env.Labelled(ctx, id)).NotTo(BeEmpty(), "mid-run, the run's objects should exist")
		Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
		go func() {
			for sc.Scan() {
				GinkgoWriter.Println(sc.Text())
			}
		}()
		err = cmd.Wait()
		var ee *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(ee))
		Expect(err.(*exec.ExitError).ExitCode()).To(Equal(130))
		Expect(env.Labelled(ctx, id)).To(BeEmpty())
		dirs, _ := filepath.Glob(filepath.Join(outDir, "fio-mig-*"))
		Expect(dirs).To(HaveLen(1))
		Expect(filepath.Join(dirs[0], record.TimelineFile)).To(BeAnExistingFile())
		fi, err := os.Stat(filepath.Join(dirs[0], record.TimelineFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Size()).To(BeNumerically(">", 0))
	})
})
