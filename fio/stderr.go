package fio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// fio prints its error and verify reports with log_err, which goes to
// stderr even with --output= (only job-file parse errors land in the output
// file). The line formats matched here are fio 3.x's:
var (
	// io_u.c __io_u_log_error:
	// "fio: io_u error on file F: <strerror>: <ddir> offset=N, buflen=L"
	ioErrorRe = regexp.MustCompile(`^fio: io_u error(?: on file (.*))?: (.+): ([a-z_]+) offset=(\d+), buflen=(\d+)$`)
	// verify.c log_verify_failure: "<name>: verify failed at file F offset
	// N, length L (requested block: offset=O, length=BL, flags=X)"
	verifyFailedRe = regexp.MustCompile(`^([^ :]{1,8}): verify failed at file (.*) offset (\d+), length (\d+) \(requested block: offset=(\d+), length=(\d+)(?:, flags=([0-9a-fA-F]+))?\)$`)
	// verify.c verify_header: "verify: <reason> at file F offset N, length
	// L (requested block: offset=O, length=BL)"
	verifyHeaderRe = regexp.MustCompile(`^verify: (.+?) at file (.*) offset (\d+), length (\d+) \(requested block: offset=(\d+), length=(\d+)\)$`)
	// verify.c verify_trimmed_io_u: "trim: verify failed at file F offset
	// N, length L, block offset B"
	verifyTrimRe = regexp.MustCompile(`^trim: verify failed at file (.*) offset (\d+), length (\d+), block offset (\d+)$`)
	// fio.c/backend.c signal handler: "fio: terminating on signal N"
	signalRe = regexp.MustCompile(`^fio: terminating on signal (\d+)$`)
)

// IOErrorCount aggregates io_u error lines of one file, errno and data
// direction (fio prints no time with them; a storm of millions of lines is
// kept as counts).
type IOErrorCount struct {
	File  string `json:"file"`
	Errno Errno  `json:"errno"` // 0 with Message "Device-specific error" or an unknown text
	// Message is fio's strerror text as printed.
	Message string `json:"message"`
	Dir     string `json:"dir"` // fio's ddir name: read, write, trim, sync, datasync, ...
	Count   int64  `json:"count"`
	// FirstLine/LastLine: 1-based stderr lines of the first and last one;
	// FirstOffset: byte offset of the first failed I/O.
	FirstLine   int   `json:"first_line"`
	LastLine    int   `json:"last_line"`
	FirstOffset int64 `json:"first_offset"`
}

// VerifyFailure is one block fio's verify found corrupt: a data-integrity
// failure, identified from fio's verify report (verify.c), never from an
// EILSEQ errno alone.
type VerifyFailure struct {
	Line int    `json:"line"` // 1-based stderr line of the report
	File string `json:"file"` // the job's file
	// Kind is the verifier that failed: the checksum ("md5", "crc32c",
	// "sha256", ...), "pattern", "verify" (the block's header failed:
	// Reason says how) or "trim".
	Kind   string `json:"kind"`
	Reason string `json:"reason"` // header failures: "bad magic header 5959, wanted acca", ...
	// Offset and Length locate the failed block in the file (bytes);
	// RequestedOffset/RequestedLength the read I/O that found it.
	Offset          int64 `json:"offset"`
	Length          int64 `json:"length"`
	RequestedOffset int64 `json:"requested_offset"`
	RequestedLength int64 `json:"requested_length"`
	// ExpectedCRC and ReceivedCRC are the checksums (hex) when fio printed
	// them; Details holds the other lines fio attached (pattern mismatch,
	// dump file names, verify type mismatch).
	ExpectedCRC string   `json:"expected_crc,omitempty"`
	ReceivedCRC string   `json:"received_crc,omitempty"`
	Details     []string `json:"details,omitempty"`
}

// StderrReport is what fio reported on stderr.
type StderrReport struct {
	IOErrors []IOErrorCount // sorted by file, errno, direction
	// VerifyFailures in report order (at most MaxVerifyFailures; the rest
	// are counted in VerifyFailuresDropped).
	VerifyFailures        []VerifyFailure
	VerifyFailuresDropped int64
	// Signal is the signal fio said it terminated on (0: none).
	Signal int
	// Other lines, at most MaxOtherLines of them (OtherDropped counts the
	// rest).
	Other        []string
	OtherDropped int64
}

// Report bounds of ParseStderr.
const (
	MaxVerifyFailures = 10000
	MaxOtherLines     = 200
)

// TotalIOErrors is the number of io_u error lines.
func (r *StderrReport) TotalIOErrors() int64 {
	var n int64
	for _, e := range r.IOErrors {
		n += e.Count
	}
	return n
}

// ParseStderr reads fio's stderr (io_u error lines, verify reports, the
// terminating signal) from r; name is used in errors. Lines it does not
// know are kept in Other: fio prints free-form notes there too. It returns
// a *ParseError only for a read error or a line longer than 1 MiB.
func ParseStderr(r io.Reader, name string) (*StderrReport, error) {
	rep := &StderrReport{}
	type ioKey struct {
		file  string
		errno Errno
		msg   string
		dir   string
	}
	counts := map[ioKey]*IOErrorCount{}
	var pendingDetails []string // pattern lines come before their failure line
	var lastVerify *VerifyFailure
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	addVerify := func(v VerifyFailure) {
		v.Details = append(v.Details, pendingDetails...)
		pendingDetails = nil
		if len(rep.VerifyFailures) >= MaxVerifyFailures {
			rep.VerifyFailuresDropped++
			lastVerify = nil
			return
		}
		rep.VerifyFailures = append(rep.VerifyFailures, v)
		lastVerify = &rep.VerifyFailures[len(rep.VerifyFailures)-1]
	}
	num := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(text)
		if m := ioErrorRe.FindStringSubmatch(text); m != nil {
			msg := m[2]
			errno, _ := ErrnoFromText(msg)
			k := ioKey{m[1], errno, msg, m[3]}
			c := counts[k]
			if c == nil {
				c = &IOErrorCount{File: m[1], Errno: errno, Message: msg, Dir: m[3], FirstLine: line, FirstOffset: num(m[4])}
				counts[k] = c
			}
			c.Count++
			c.LastLine = line
			lastVerify = nil
			continue
		}
		if m := verifyFailedRe.FindStringSubmatch(text); m != nil {
			addVerify(VerifyFailure{Line: line, Kind: m[1], File: m[2], Offset: num(m[3]), Length: num(m[4]),
				RequestedOffset: num(m[5]), RequestedLength: num(m[6]), Reason: "checksum mismatch"})
			if m[1] == "pattern" {
				lastVerify.Reason = "pattern mismatch"
			}
			continue
		}
		if m := verifyHeaderRe.FindStringSubmatch(text); m != nil {
			addVerify(VerifyFailure{Line: line, Kind: "verify", Reason: m[1], File: m[2], Offset: num(m[3]), Length: num(m[4]),
				RequestedOffset: num(m[5]), RequestedLength: num(m[6])})
			continue
		}
		if m := verifyTrimRe.FindStringSubmatch(text); m != nil {
			addVerify(VerifyFailure{Line: line, Kind: "trim", Reason: "trimmed block not zero at block offset " + m[4], File: m[1],
				Offset: num(m[2]), Length: num(m[3]), RequestedOffset: num(m[2]), RequestedLength: num(m[3])})
			continue
		}
		if v, ok := strings.CutPrefix(trimmed, "Expected CRC: "); ok && lastVerify != nil {
			lastVerify.ExpectedCRC = v
			continue
		}
		if v, ok := strings.CutPrefix(trimmed, "Received CRC: "); ok && lastVerify != nil {
			lastVerify.ReceivedCRC = v
			continue
		}
		if strings.HasPrefix(trimmed, "fio: got pattern ") || strings.HasPrefix(trimmed, "fio: bad pattern block offset ") {
			pendingDetails = append(pendingDetails, trimmed)
			continue
		}
		if lastVerify != nil && (strings.Contains(trimmed, " data dumped as ") || strings.HasPrefix(trimmed, "fio: verify type mismatch")) {
			lastVerify.Details = append(lastVerify.Details, trimmed)
			continue
		}
		if m := signalRe.FindStringSubmatch(trimmed); m != nil {
			rep.Signal = int(num(m[1]))
			continue
		}
		if trimmed == "" {
			continue
		}
		if len(rep.Other) < MaxOtherLines {
			rep.Other = append(rep.Other, text)
		} else {
			rep.OtherDropped++
		}
	}
	if err := sc.Err(); err != nil {
		msg := "reading"
		if errors.Is(err, bufio.ErrTooLong) {
			msg = "line longer than 1 MiB"
		}
		return rep, &ParseError{Name: name, Line: line + 1, Msg: msg, Err: err}
	}
	for _, c := range counts {
		rep.IOErrors = append(rep.IOErrors, *c)
	}
	sort.Slice(rep.IOErrors, func(i, j int) bool {
		a, b := rep.IOErrors[i], rep.IOErrors[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Errno != b.Errno {
			return a.Errno < b.Errno
		}
		if a.Dir != b.Dir {
			return a.Dir < b.Dir
		}
		return a.Message < b.Message
	})
	return rep, nil
}

// String summarises a verify failure as one line.
func (v VerifyFailure) String() string {
	return fmt.Sprintf("%s: %s at %s offset %d, length %d", v.Kind, v.Reason, v.File, v.Offset, v.Length)
}
