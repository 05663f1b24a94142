package fio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readLog(t *testing.T, file string, legacy bool) ([]LogEntry, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "logs", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := NewLogReader(f, file)
	lr.LegacyOffsets = legacy
	var got []LogEntry
	for lr.Scan() {
		got = append(got, lr.Entry())
	}
	return got, lr.Err()
}

func TestLogReaderFormats(t *testing.T) {
	for _, tc := range []struct {
		file   string
		legacy bool
		want   []LogEntry
	}{
		{"v6-offset-prio.log", false, []LogEntry{ // fio 3.33, log_offset=1
			{TimeMs: 1795978110036, Value: 417945, Dir: Read, BlockSize: 4096, Offset: 249856},
			{TimeMs: 1795978110036, Value: 322341, Dir: Read, BlockSize: 4096, Offset: 3104768},
			{TimeMs: 1795978110037, Value: 88154, Dir: Write, BlockSize: 4096, Offset: 1970176},
		}},
		{"v5-hexprio.log", false, []LogEntry{ // log_prio=1 prints 0x%04x; a blank line is skipped
			{TimeMs: 12, Value: 417945, Dir: Read, BlockSize: 4096, Offset: -1, Prio: 0x2004},
			{TimeMs: 13, Value: 88154, Dir: Write, BlockSize: 4096, Offset: -1},
			{TimeMs: 15, Value: 100, Dir: Trim, BlockSize: 8192, Offset: -1, Prio: 1},
		}},
		{"v5-prio-crlf.log", false, []LogEntry{
			{TimeMs: 12, Value: 417945, Dir: Read, BlockSize: 4096, Offset: -1, Prio: 1},
			{TimeMs: 13, Value: 88154, Dir: Write, BlockSize: 4096, Offset: -1},
		}},
		{"v4-old.log", false, []LogEntry{
			{TimeMs: 1000, Value: 512, Dir: Read, BlockSize: 4096, Offset: -1},
			{TimeMs: 2000, Value: 1024, Dir: Write, BlockSize: 0, Offset: -1},
		}},
		{"legacy5-offset.log", true, []LogEntry{
			{TimeMs: 12, Value: 417945, Dir: Read, BlockSize: 4096, Offset: 249856},
			{TimeMs: 13, Value: 88154, Dir: Write, BlockSize: 4096, Offset: 4096},
		}},
		{"empty.log", false, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := readLog(t, tc.file, tc.legacy)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLogReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		file      string
		entries   int // read before the error
		line      int
		contains  string
		truncated bool
	}{
		{"bad-number.log", 1, 2, "column 2 is not a number", false},
		{"column-change.log", 2, 3, "6 columns, earlier lines have 5", false},
		{"bad-direction.log", 0, 1, "direction 7", false},
		{"truncated-last-line.log", 2, 3, "log line without newline", true},
		{"too-few-columns.log", 0, 1, "2 columns, a fio log has 4 to 6", false},
		{"too-many-columns.log", 0, 1, "more than 6 columns", false},
		{"trailing-junk.log", 0, 1, "not a number", false},
		{"empty-column.log", 0, 1, "column 2 is not a number", false},
		{"negative-time.log", 0, 1, "column 1 is not a number", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := readLog(t, tc.file, false)
			if err == nil {
				t.Fatalf("read %v, want an error", got)
			}
			if len(got) != tc.entries {
				t.Errorf("%d entries before the error, want %d", len(got), tc.entries)
			}
			if errors.Is(err, ErrTruncated) != tc.truncated {
				t.Errorf("errors.Is(%v, ErrTruncated) != %v", err, tc.truncated)
			}
			line := 0
			var pe *ParseError
			var te *TruncatedError
			if errors.As(err, &pe) {
				line = pe.Line
			} else if errors.As(err, &te) {
				line = te.Line
			}
			if line != tc.line || !strings.Contains(err.Error(), tc.contains) || !strings.HasPrefix(err.Error(), tc.file+":") {
				t.Errorf("error %q (line %d); want %s:%d ... %q", err, line, tc.file, tc.line, tc.contains)
			}
		})
	}
}

func TestLogReaderLongLine(t *testing.T) {
	lr := NewLogReader(strings.NewReader(strings.Repeat("1", 300<<10)+"\n"), "long.log")
	if lr.Scan() {
		t.Fatal("scanned a 300 KiB line")
	}
	if err := lr.Err(); err == nil || !strings.Contains(err.Error(), "long.log:1: line longer than") {
		t.Errorf("err = %v", err)
	}
}

func TestDirectionString(t *testing.T) {
	got := []string{Read.String(), Write.String(), Trim.String(), Direction(9).String()}
	if diff := cmp.Diff([]string{"read", "write", "trim", "direction(9)"}, got); diff != "" {
		t.Error(diff)
	}
}
