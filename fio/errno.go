package fio

import (
	"strconv"
	"strings"
)

// Errno is a Linux errno value as fio reports it (the JSON "error",
// "first_error" fields, ignore_error= lists, the strerror text of an io_u
// error line). Values are Linux's (include/uapi/asm-generic/errno*.h); fio
// is a leaf of the standard library and does not use syscall's per-OS table.
type Errno int

// The errnos a migration can produce on a host, and the ones fiomig
// classifies. The block layer maps a failed request's blk_status_t to an
// errno (kernel block/blk-core.c blk_errors): BLK_STS_IOERR -> EIO,
// BLK_STS_TARGET -> EREMOTEIO, BLK_STS_TRANSPORT -> ENOLINK (the NVMe
// "host path error" status), BLK_STS_TIMEOUT -> ETIMEDOUT, BLK_STS_OFFLINE ->
// ENODEV, BLK_STS_MEDIUM -> ENODATA, BLK_STS_NOSPC -> ENOSPC,
// BLK_STS_PROTECTION -> EILSEQ. A FUSE file whose daemon went away answers
// ENOTCONN. fio itself reports a verify failure as EILSEQ too, which is why
// EILSEQ alone never proves a data-integrity failure (see VerifyFailure).
const (
	EPERM     Errno = 1
	ENOENT    Errno = 2
	EINTR     Errno = 4
	EIO       Errno = 5
	ENXIO     Errno = 6
	EBADF     Errno = 9
	EAGAIN    Errno = 11
	ENOMEM    Errno = 12
	EACCES    Errno = 13
	EFAULT    Errno = 14
	EBUSY     Errno = 16
	ENODEV    Errno = 19
	EINVAL    Errno = 22
	EFBIG     Errno = 27
	ENOSPC    Errno = 28
	EROFS     Errno = 30
	EBADE     Errno = 52
	ENODATA   Errno = 61
	ETIME     Errno = 62
	ENOLINK   Errno = 67
	EILSEQ    Errno = 84
	EOPNOTSUP Errno = 95
	ENOTCONN  Errno = 107
	ETIMEDOUT Errno = 110
	EREMOTEIO Errno = 121
	EDQUOT    Errno = 122
	ECANCELED Errno = 125
)

type errnoInfo struct {
	name, text string // symbolic name; glibc strerror(3) text
}

var errnoTable = map[Errno]errnoInfo{
	EPERM:     {"EPERM", "Operation not permitted"},
	ENOENT:    {"ENOENT", "No such file or directory"},
	EINTR:     {"EINTR", "Interrupted system call"},
	EIO:       {"EIO", "Input/output error"},
	ENXIO:     {"ENXIO", "No such device or address"},
	EBADF:     {"EBADF", "Bad file descriptor"},
	EAGAIN:    {"EAGAIN", "Resource temporarily unavailable"},
	ENOMEM:    {"ENOMEM", "Cannot allocate memory"},
	EACCES:    {"EACCES", "Permission denied"},
	EFAULT:    {"EFAULT", "Bad address"},
	EBUSY:     {"EBUSY", "Device or resource busy"},
	ENODEV:    {"ENODEV", "No such device"},
	EINVAL:    {"EINVAL", "Invalid argument"},
	EFBIG:     {"EFBIG", "File too large"},
	ENOSPC:    {"ENOSPC", "No space left on device"},
	EROFS:     {"EROFS", "Read-only file system"},
	EBADE:     {"EBADE", "Invalid exchange"},
	ENODATA:   {"ENODATA", "No data available"},
	ETIME:     {"ETIME", "Timer expired"},
	ENOLINK:   {"ENOLINK", "Link has been severed"},
	EILSEQ:    {"EILSEQ", "Invalid or incomplete multibyte or wide character"},
	EOPNOTSUP: {"EOPNOTSUPP", "Operation not supported"},
	ENOTCONN:  {"ENOTCONN", "Transport endpoint is not connected"},
	ETIMEDOUT: {"ETIMEDOUT", "Connection timed out"},
	EREMOTEIO: {"EREMOTEIO", "Remote I/O error"},
	EDQUOT:    {"EDQUOT", "Disk quota exceeded"},
	ECANCELED: {"ECANCELED", "Operation canceled"},
}

var errnoByText = func() map[string]Errno {
	m := make(map[string]Errno, len(errnoTable))
	for e, info := range errnoTable {
		m[info.text] = e
	}
	return m
}()

// String is the symbolic name ("EREMOTEIO"), or "errno N" for a value this
// package has no name for.
func (e Errno) String() string {
	if info, ok := errnoTable[e]; ok {
		return info.name
	}
	return "errno " + strconv.Itoa(int(e))
}

// Text is glibc's strerror(3) text for e ("Remote I/O error"), which is
// what fio prints in its io_u error lines; "" when unknown.
func (e Errno) Text() string { return errnoTable[e].text }

// ErrnoFromText maps a strerror(3) text as fio prints it back to its errno;
// ok is false for a text this package does not know (it also accepts glibc's
// "Unknown error N").
func ErrnoFromText(text string) (e Errno, ok bool) {
	if e, ok := errnoByText[text]; ok {
		return e, true
	}
	if n, found := strings.CutPrefix(text, "Unknown error "); found {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			return Errno(v), true
		}
	}
	return 0, false
}

// ErrorClass groups errnos the way fiomig reports them.
type ErrorClass string

// Error classes. PathLoss errnos are what a host sees when a volume's paths
// go away (the I/O should have been requeued but failed); Capacity and
// ReadOnly are target-side refusals; Integrity is a verify failure proven by
// fio's verify report; Other is anything else.
const (
	ClassPathLoss  ErrorClass = "path-loss"
	ClassGeneric   ErrorClass = "io-error" // EIO: the block layer's catch-all
	ClassCapacity  ErrorClass = "capacity"
	ClassReadOnly  ErrorClass = "read-only"
	ClassIntegrity ErrorClass = "data-integrity"
	ClassOther     ErrorClass = "other"
)

// Class classifies an errno from an io_u error line. EILSEQ on an I/O (not
// in a verify report) is BLK_STS_PROTECTION and classifies as Other: only a
// verify report makes a ClassIntegrity finding.
func (e Errno) Class() ErrorClass {
	switch e {
	case EREMOTEIO, ENOLINK, ENOTCONN, ETIMEDOUT, ENODEV:
		return ClassPathLoss
	case EIO:
		return ClassGeneric
	case ENOSPC, EDQUOT:
		return ClassCapacity
	case EROFS:
		return ClassReadOnly
	default:
		return ClassOther
	}
}
