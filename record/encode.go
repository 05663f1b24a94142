package record

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// appendLine appends l encoded as one JSON object, exactly the bytes
// encoding/json gives for Line with HTML escaping off (field order of the
// struct, omitempty, its float and string forms), without the newline.
// It handles the flat lines that make up most of a timeline (kernel, io,
// heartbeat, phase, target, endpoints); ok is false, and b unchanged, for a
// line with nested values (controllers, subsystems, evidence, details), a
// stall line's fields, or a non-finite number, which the caller encodes
// with encoding/json.
// TestAppendLineMatchesJSON holds it to encoding/json byte for byte.
func appendLine(b []byte, l *Line) (_ []byte, ok bool) {
	if len(l.Controllers) > 0 || len(l.Subsystems) > 0 || len(l.Evidence) > 0 || len(l.Details) > 0 ||
		l.Address != "" || len(l.NSIDs) > 0 || l.StartS != nil ||
		!finite(l.T) || !finite(l.HeartbeatIntervalS) {
		return b, false
	}
	b = append(b, `{"t":`...)
	b = appendFloat(b, l.T)
	b = append(b, `,"kind":`...)
	b = appendString(b, l.Kind)
	b = appendStringField(b, `,"host":`, l.Host)
	b = appendStringsField(b, `,"hosts":`, l.Hosts)
	if l.Version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(l.Version), 10)
	}
	if l.HeartbeatIntervalS != 0 {
		b = append(b, `,"heartbeat_interval_s":`...)
		b = appendFloat(b, l.HeartbeatIntervalS)
	}
	b = appendStringField(b, `,"migration":`, l.Migration)
	b = appendStringField(b, `,"nqn":`, l.NQN)
	b = appendStringField(b, `,"phase":`, l.Phase)
	b = appendStringField(b, `,"reason":`, l.Reason)
	b = appendStringsField(b, `,"source_endpoints":`, l.SourceEndpoints)
	b = appendStringsField(b, `,"target_endpoints":`, l.TargetEndpoints)
	b = appendStringField(b, `,"fault":`, l.Fault)
	b = appendStringField(b, `,"action":`, l.Action)
	b = appendStringField(b, `,"target":`, l.Target)
	b = appendStringField(b, `,"volume":`, l.Volume)
	b = appendInt64Field(b, `,"completed":`, l.Completed)
	b = appendInt64Field(b, `,"errors":`, l.Errors)
	b = appendInt64Field(b, `,"queued":`, l.Queued)
	if l.Errno != 0 {
		b = append(b, `,"errno":`...)
		b = strconv.AppendInt(b, int64(l.Errno), 10)
	}
	b = appendInt64Field(b, `,"verify_errors":`, l.VerifyErrors)
	b = appendStringField(b, `,"controller":`, l.Controller)
	b = appendStringField(b, `,"message":`, l.Message)
	b = appendStringField(b, `,"node":`, l.Node)
	b = appendInt64Field(b, `,"rejected_connects":`, l.RejectedConnects)
	b = appendInt64Field(b, `,"not_allowed_connects":`, l.NotAllowedConnects)
	b = appendStringsField(b, `,"endpoints":`, l.Endpoints)
	b = appendStringField(b, `,"pod":`, l.Pod)
	b = appendStringField(b, `,"pod_state":`, l.PodState)
	return append(b, '}'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func appendStringField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func appendStringsField(b []byte, key string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, ']')
}

func appendInt64Field(b []byte, key string, v *int64) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(append(b, key...), *v, 10)
}

// appendFloat is encoding/json's float64 form: the shortest decimal that
// round-trips, with an exponent only below 1e-6 or from 1e21 on (and a
// two-digit negative exponent written without its leading zero).
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, f, fmt, -1, 64)
	if fmt == 'e' {
		// e-07 -> e-7
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string form with HTML escaping off:
// '"' and '\\' escaped, control characters as \b \f \n \r \t or \u00XX,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
