package fio

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testdata/stderr/mixed.txt holds one line of every report format fio 3.x
// prints on stderr (io_u.c __io_u_log_error; verify.c log_verify_failure,
// verify_header, verify_trimmed_io_u, check_pattern, dump_buf), as the
// format strings of fio's source produce them.
func TestParseStderrMixed(t *testing.T) {
	rep, err := ParseStderrFile(filepath.Join("testdata", "stderr", "mixed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v0, v1 := "/mnt/fiomig/vol-0", "/mnt/fiomig/vol-1"
	want := &StderrReport{
		IOErrors: []IOErrorCount{
			{File: "", Errno: ENOSPC, Message: "No space left on device", Dir: "write", Count: 1, FirstLine: 10, LastLine: 10},
			{File: v0, Errno: ENOLINK, Message: "Link has been severed", Dir: "read", Count: 1, FirstLine: 3, LastLine: 3, FirstOffset: 4096},
			{File: v0, Errno: EREMOTEIO, Message: "Remote I/O error", Dir: "read", Count: 1, FirstLine: 2, LastLine: 2, FirstOffset: 8192},
			{File: v0, Errno: EREMOTEIO, Message: "Remote I/O error", Dir: "write", Count: 2, FirstLine: 1, LastLine: 4, FirstOffset: 1048576},
			{File: v1, Errno: 0, Message: "Device-specific error", Dir: "write", Count: 1, FirstLine: 8, LastLine: 8, FirstOffset: 4096},
			{File: v1, Errno: EIO, Message: "Input/output error", Dir: "write", Count: 1, FirstLine: 6, LastLine: 6, FirstOffset: 40960},
			{File: v1, Errno: ENOTCONN, Message: "Transport endpoint is not connected", Dir: "read", Count: 1, FirstLine: 5, LastLine: 5},
			{File: v1, Errno: 523, Message: "Unknown error 523", Dir: "read", Count: 1, FirstLine: 7, LastLine: 7, FirstOffset: 81920},
			{File: "/mnt/with: colon", Errno: EROFS, Message: "Read-only file system", Dir: "write", Count: 1, FirstLine: 9, LastLine: 9},
		},
		VerifyFailures: []VerifyFailure{
			{Line: 11, File: v0, Kind: "md5", Reason: "checksum mismatch", Offset: 49152, Length: 4096, RequestedOffset: 49152, RequestedLength: 4096,
				ExpectedCRC: "0f343b0931126a20f133d67c2b018a3b", ReceivedCRC: "2b5c8f0e1a7d3e9f40c1b2a3d4e5f607",
				Details: []string{"received data dumped as vol-0.49152.received", "expected data dumped as vol-0.49152.expected"}},
			{Line: 16, File: v0, Kind: "verify", Reason: "bad magic header 5959, wanted acca", Offset: 81920, Length: 4096, RequestedOffset: 81920, RequestedLength: 4096},
			{Line: 17, File: v1, Kind: "verify", Reason: "bad header offset 8192, wanted 12288", Offset: 12288, Length: 4096, RequestedOffset: 12288, RequestedLength: 4096},
			{Line: 18, File: v1, Kind: "verify", Reason: "bad header crc a1b2c3d4, calculated 11223344", Offset: 16384, Length: 4096, RequestedOffset: 16384, RequestedLength: 4096},
			{Line: 21, File: v1, Kind: "pattern", Reason: "pattern mismatch", Offset: 20480, Length: 4096, RequestedOffset: 20480, RequestedLength: 8192,
				Details: []string{"fio: got pattern '00', wanted 'aa'. Bad bits 4", "fio: bad pattern block offset 17"}},
			{Line: 22, File: v1, Kind: "crc32c", Reason: "checksum mismatch", Offset: 28672, Length: 4096, RequestedOffset: 24576, RequestedLength: 8192,
				Details: []string{"fio: verify type mismatch (5 media, 2 given)"}},
			{Line: 24, File: v1, Kind: "trim", Reason: "trimmed block not zero at block offset 12", Offset: 32768, Length: 4096, RequestedOffset: 32768, RequestedLength: 4096},
		},
		Signal: 15,
		Other: []string{
			"note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1",
			"fio: pid=4242, err=121/file:io_u.c:1845, func=io_u error, error=Remote I/O error",
		},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := rep.TotalIOErrors(); n != 10 {
		t.Errorf("TotalIOErrors = %d, want 10", n)
	}
}

// The real ENOSPC capture (fio 3.33 writing 16 KiB to /dev/full with
// ignore_error=,28 and error_dump=1) and its JSON result agree.
func TestParseStderrRealCapture(t *testing.T) {
	rep, err := ParseStderrFile(filepath.Join("testdata", "stderr", "full-enospc.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseResultFile(filepath.Join("testdata", "json", "full-enospc.json"))
	if err != nil {
		t.Fatal(err)
	}
	jr, _ := res.Job("full")
	ja := AnalyzeJob("full", res.JobFile(jr), jr, GapAnalysis{}, rep)
	want := JobAnalysis{Job: "full", File: "/dev/full", IOErrors: 4, TotalErr: 4, FirstError: ENOSPC, ExitError: ENOSPC,
		Errors:        []ErrnoCount{{Errno: ENOSPC, Name: "ENOSPC", Class: ClassCapacity, Count: 4}},
		ErrorsByClass: map[ErrorClass]int64{ClassCapacity: 4}}
	if diff := cmp.Diff(want, ja); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// EILSEQ in fio's JSON without a verify report is not a data-integrity
// finding (the block layer's BLK_STS_PROTECTION is EILSEQ too).
func TestEILSEQAloneIsNotIntegrity(t *testing.T) {
	jr := &JobResult{Name: "j", Error: EILSEQ, TotalErr: 1, FirstError: EILSEQ}
	rep, err := ParseStderr(strings.NewReader("fio: io_u error on file /f: Invalid or incomplete multibyte or wide character: read offset=0, buflen=4096\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	ja := AnalyzeJob("j", "/f", jr, GapAnalysis{}, rep)
	if ja.DataIntegrityFailure() || ja.ErrorsByClass[ClassIntegrity] != 0 || ja.ErrorsByClass[ClassOther] != 1 {
		t.Errorf("EILSEQ io_u error analysed as %+v", ja)
	}
	ja = AnalyzeJob("j", "/f", jr, GapAnalysis{}, nil)
	if ja.DataIntegrityFailure() || ja.Unreported != 1 {
		t.Errorf("EILSEQ with no stderr: %+v, want 1 unreported and no integrity failure", ja)
	}
}

func TestParseStderrFiltersByFileAndCaps(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxVerifyFailures+5; i++ {
		b.WriteString("md5: verify failed at file /a offset 0, length 4096 (requested block: offset=0, length=4096, flags=88)\n")
	}
	for i := 0; i < MaxOtherLines+3; i++ {
		b.WriteString("something else\n")
	}
	rep, err := ParseStderr(strings.NewReader(b.String()), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VerifyFailures) != MaxVerifyFailures || rep.VerifyFailuresDropped != 5 || len(rep.Other) != MaxOtherLines || rep.OtherDropped != 3 {
		t.Errorf("kept %d verify failures (+%d dropped), %d other lines (+%d)", len(rep.VerifyFailures), rep.VerifyFailuresDropped, len(rep.Other), rep.OtherDropped)
	}
	if ja := AnalyzeJob("b", "/b", nil, GapAnalysis{}, rep); ja.DataIntegrityFailure() {
		t.Error("verify failures of /a attributed to /b")
	}
}

func TestErrnoNamesAndClasses(t *testing.T) {
	for _, tc := range []struct {
		e     Errno
		name  string
		text  string
		class ErrorClass
	}{
		{EIO, "EIO", "Input/output error", ClassGeneric},
		{EREMOTEIO, "EREMOTEIO", "Remote I/O error", ClassPathLoss},
		{ENOLINK, "ENOLINK", "Link has been severed", ClassPathLoss},
		{ENOTCONN, "ENOTCONN", "Transport endpoint is not connected", ClassPathLoss},
		{ENOSPC, "ENOSPC", "No space left on device", ClassCapacity},
		{EROFS, "EROFS", "Read-only file system", ClassReadOnly},
		{EILSEQ, "EILSEQ", "Invalid or incomplete multibyte or wide character", ClassOther},
		{999, "errno 999", "", ClassOther},
	} {
		if tc.e.String() != tc.name || tc.e.Text() != tc.text || tc.e.Class() != tc.class {
			t.Errorf("%d: %q %q %q, want %q %q %q", int(tc.e), tc.e.String(), tc.e.Text(), tc.e.Class(), tc.name, tc.text, tc.class)
		}
		if tc.text != "" {
			if e, ok := ErrnoFromText(tc.text); !ok || e != tc.e {
				t.Errorf("ErrnoFromText(%q) = %v, %v", tc.text, e, ok)
			}
		}
	}
	if _, ok := ErrnoFromText("Unknown error x"); ok {
		t.Error("ErrnoFromText accepted a non-number")
	}
}
