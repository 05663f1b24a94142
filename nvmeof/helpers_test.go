package nvmeof

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

const capturesDir = "testdata/sysfs-captures"

// loadCaptureFile loads one committed capture.
func loadCaptureFile(t testing.TB, name string) fs.FS {
	t.Helper()
	f, err := os.Open(filepath.Join(capturesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fsys, err := LoadCapture(f, name)
	if err != nil {
		t.Fatalf("LoadCapture(%s): %v", name, err)
	}
	return fsys
}

func readCaptureFile(t testing.TB, name string) HostState {
	t.Helper()
	h, err := ReadSysfs(loadCaptureFile(t, name))
	if err != nil {
		t.Fatalf("ReadSysfs(%s): %v", name, err)
	}
	return h
}

// Test trees: a compact description of a host, rendered into the kernel's
// sysfs layout and read back through ReadSysfs, so that every rule test also
// goes through the parser.

type tLeg struct {
	nsid int
	ana  string // "" = no ana_state file
}

type tCtrl struct {
	inst    int
	state   string
	addr    string // address file content
	host    string // hostnqn; "" = hostA
	legs    []tLeg
	noSubsy bool // not listed in its subsystem directory
}

type tSubsys struct {
	inst  int
	nqn   string
	nsids []int // heads nvmeSn1, nvmeSn2, ... get these NSIDs (head index != NSID on purpose when nsids are not 1..n)
	ctrls []tCtrl
}

const (
	hostA = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-00000000000a"
	hostB = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-00000000000b"
	nqnX  = "nqn.2023-02.io.simplyblock:test:lvol:x"
	nqnY  = "nqn.2023-02.io.simplyblock:test:lvol:y"
)

func tcp(ipPort string) string {
	host, port, err := splitHostPortLoose(ipPort)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("traddr=%s,trsvcid=%s,src_addr=10.9.9.9", host, port)
}

func splitHostPortLoose(s string) (string, string, error) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			h := s[:i]
			if len(h) > 1 && h[0] == '[' {
				h = h[1 : len(h)-1]
			}
			return h, s[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("no port in %q", s)
}

// treeFiles renders subsystems into a file map for FSFromFiles.
func treeFiles(subs ...tSubsys) map[string]string {
	files := map[string]string{}
	put := func(p, v string) { files[p] = v + "\n" }
	for _, s := range subs {
		sd := fmt.Sprintf("class/nvme-subsystem/nvme-subsys%d", s.inst)
		put(sd+"/subsysnqn", s.nqn)
		put(sd+"/iopolicy", "numa")
		heads := map[int]int{} // nsid -> head index
		for i, id := range s.nsids {
			heads[id] = i + 1
			put(fmt.Sprintf("%s/nvme%dn%d/nsid", sd, s.inst, i+1), fmt.Sprint(id))
		}
		for _, c := range s.ctrls {
			name := fmt.Sprintf("nvme%d", c.inst)
			if !c.noSubsy {
				put(sd+"/"+name+"/state", c.state)
			}
			cd := "class/nvme/" + name
			host := c.host
			if host == "" {
				host = hostA
			}
			for k, v := range map[string]string{
				"state": c.state, "transport": "tcp", "address": c.addr, "subsysnqn": s.nqn,
				"cntlid": fmt.Sprint(c.inst + 1), "hostnqn": host, "hostid": "id-" + host[len(host)-1:],
				"ctrl_loss_tmo": "60", "reconnect_delay": "2", "fast_io_fail_tmo": "off",
			} {
				put(cd+"/"+k, v)
			}
			for _, l := range c.legs {
				h, ok := heads[l.nsid]
				if !ok {
					h = 100 + l.nsid
				}
				ld := fmt.Sprintf("%s/nvme%dc%dn%d", cd, s.inst, c.inst, h)
				put(ld+"/nsid", fmt.Sprint(l.nsid))
				if l.ana != "" {
					put(ld+"/ana_state", l.ana)
				}
				put(ld+"/ana_grpid", "1")
			}
		}
	}
	return files
}

func buildTree(t testing.TB, subs ...tSubsys) fs.FS {
	t.Helper()
	fsys, err := FSFromFiles(treeFiles(subs...))
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// readFiles reads the tree of files (FSFromFiles) with ReadSysfs.
func readFiles(t testing.TB, files map[string]string) HostState {
	t.Helper()
	fsys, err := FSFromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadSysfs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func buildHost(t testing.TB, subs ...tSubsys) HostState {
	t.Helper()
	h, err := ReadSysfs(buildTree(t, subs...))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func legs(ana string, nsids ...int) []tLeg {
	out := make([]tLeg, len(nsids))
	for i, id := range nsids {
		out[i] = tLeg{nsid: id, ana: ana}
	}
	return out
}

// rebuildOnDisk writes the sysfs tree fsys under root in the shape of a real
// /sys: controller directories live at devices/virtual/nvme-fabrics/ctl/nvmeN
// and subsystems at devices/virtual/nvme-subsystem/nvme-subsysS, with
// class/nvme/nvmeN, class/nvme-subsystem/nvme-subsysS and each subsystem's
// controller entries as symlinks to them. A capture repeats a controller's
// attributes under its subsystem entry; those copies are checked against the
// controller's own files instead of written. It returns ReadSysfs(fsys).
func rebuildOnDisk(t testing.TB, fsys fs.FS, root string) HostState {
	t.Helper()
	const ctlDir = "devices/virtual/nvme-fabrics/ctl"
	const subDir = "devices/virtual/nvme-subsystem"
	links := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		elems := strings.Split(p, "/")
		dst := p
		switch {
		case len(elems) >= 4 && elems[0] == "class" && elems[1] == "nvme":
			dst = path.Join(append([]string{ctlDir}, elems[2:]...)...)
			links["class/nvme/"+elems[2]] = "../../" + ctlDir + "/" + elems[2]
		case len(elems) >= 4 && elems[0] == "class" && elems[1] == "nvme-subsystem":
			links["class/nvme-subsystem/"+elems[2]] = "../../" + subDir + "/" + elems[2]
			if _, ok := parseCtrlName(elems[3]); ok && len(elems) >= 5 {
				links[path.Join(subDir, elems[2], elems[3])] = "../../nvme-fabrics/ctl/" + elems[3]
				own, err := fs.ReadFile(fsys, path.Join("class/nvme", elems[3], path.Join(elems[4:]...)))
				if err == nil && string(own) != string(data) {
					t.Errorf("capture: %s = %q but the controller's own file says %q", p, data, own)
				}
				return nil
			}
			dst = path.Join(append([]string{subDir}, elems[2:]...)...)
		}
		full := filepath.Join(root, filepath.FromSlash(dst))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for l, target := range links {
		full := filepath.Join(root, filepath.FromSlash(l))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadSysfs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
