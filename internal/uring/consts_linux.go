//go:build linux

package uring

// The constants below are io_uring's ABI. golang.org/x/sys/unix has only the
// system call numbers (unix.SYS_IO_URING_SETUP, _ENTER, _REGISTER), so each
// value is copied from the kernel header include/uapi/linux/io_uring.h, under the
// name it has there; values added after Linux 6.1 were checked against the
// mainline header's history.

// io_uring_setup(2) flags (io_uring.h: IORING_SETUP_*).
const (
	setupCQSize        = 1 << 3  // IORING_SETUP_CQSIZE, 5.5
	setupClamp         = 1 << 4  // IORING_SETUP_CLAMP, 5.6
	setupSubmitAll     = 1 << 7  // IORING_SETUP_SUBMIT_ALL, 5.18
	setupCoopTaskrun   = 1 << 8  // IORING_SETUP_COOP_TASKRUN, 5.19
	setupTaskrunFlag   = 1 << 9  // IORING_SETUP_TASKRUN_FLAG, 5.19
	setupSingleIssuer  = 1 << 12 // IORING_SETUP_SINGLE_ISSUER, 6.0
	setupDeferTaskrun  = 1 << 13 // IORING_SETUP_DEFER_TASKRUN, 6.1
	setupFlagNameCount = 14
)

// setupFlagNames names the setup flags by bit (io_uring.h's IORING_SETUP_*
// without the prefix).
var setupFlagNames = [setupFlagNameCount]string{
	"IOPOLL", "SQPOLL", "SQ_AFF", "CQSIZE", "CLAMP", "ATTACH_WQ", "R_DISABLED",
	"SUBMIT_ALL", "COOP_TASKRUN", "TASKRUN_FLAG", "SQE128", "CQE32",
	"SINGLE_ISSUER", "DEFER_TASKRUN",
}

// io_uring_enter(2) flags (io_uring.h: IORING_ENTER_*).
const (
	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG, 5.11
)

// sq_ring->flags (io_uring.h: IORING_SQ_*).
const (
	sqCQOverflow = 1 << 1 // IORING_SQ_CQ_OVERFLOW: completions wait in the kernel's overflow list
	sqTaskrun    = 1 << 2 // IORING_SQ_TASKRUN: task work pending, enter to run it
)

// Offsets for mmap(2) of the ring descriptor (io_uring.h: IORING_OFF_*).
const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000
)

// io_uring_params->features (io_uring.h: IORING_FEAT_*).
const (
	FeatSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP: SQ and CQ rings share one mapping
	FeatNoDrop     = 1 << 1 // IORING_FEAT_NODROP: an overflowing CQE is kept, not dropped
	FeatFastPoll   = 1 << 5 // IORING_FEAT_FAST_POLL: sockets are polled internally, not offloaded
	FeatExtArg     = 1 << 8 // IORING_FEAT_EXT_ARG: enter takes a timeout (IORING_ENTER_EXT_ARG)
)

// featureNames names the feature bits (io_uring.h's IORING_FEAT_* without the
// prefix); bits 13 to 17 were added in 6.0 to 6.14.
var featureNames = []string{
	"SINGLE_MMAP", "NODROP", "SUBMIT_STABLE", "RW_CUR_POS", "CUR_PERSONALITY",
	"FAST_POLL", "POLL_32BITS", "SQPOLL_NONFIXED", "EXT_ARG", "NATIVE_WORKERS",
	"RSRC_TAGS", "CQE_SKIP", "LINKED_FILE", "REG_REG_RING", "RECVSEND_BUNDLE",
	"MIN_TIMEOUT", "RW_ATTR", "NO_IOWAIT",
}

// Opcodes (io_uring.h: enum io_uring_op). Only those the layer prepares are
// declared; opNames names all of them.
const (
	opNop         = 0  // IORING_OP_NOP
	opTimeout     = 11 // IORING_OP_TIMEOUT
	opAccept      = 13 // IORING_OP_ACCEPT
	opAsyncCancel = 14 // IORING_OP_ASYNC_CANCEL
	opClose       = 19 // IORING_OP_CLOSE
	opRead        = 22 // IORING_OP_READ
	opSend        = 26 // IORING_OP_SEND
	opRecv        = 27 // IORING_OP_RECV
)

// opNames names the opcodes by number (io_uring.h's IORING_OP_* without the
// prefix), through Linux 6.18; numbers 48 and up were added in 6.7 to 6.18.
var opNames = []string{
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED", "POLL_ADD",
	"POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG", "TIMEOUT",
	"TIMEOUT_REMOVE", "ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT", "CONNECT",
	"FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE", "STATX", "READ", "WRITE",
	"FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2", "EPOLL_CTL", "SPLICE",
	"PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE", "SHUTDOWN", "RENAMEAT",
	"UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT", "MSG_RING", "FSETXATTR",
	"SETXATTR", "FGETXATTR", "GETXATTR", "SOCKET", "URING_CMD", "SEND_ZC",
	"SENDMSG_ZC", "READ_MULTISHOT", "WAITID", "FUTEX_WAIT", "FUTEX_WAKE",
	"FUTEX_WAITV", "FIXED_FD_INSTALL", "FTRUNCATE", "BIND", "LISTEN", "RECV_ZC",
	"EPOLL_WAIT", "READV_FIXED", "WRITEV_FIXED", "PIPE", "NOP128", "URING_CMD128",
}

// sqe->flags (io_uring.h: IOSQE_*).
const (
	// SQEIOLink links this SQE to the next: the next starts when this one
	// completes successfully (IOSQE_IO_LINK).
	SQEIOLink = 1 << 2
	// sqeBufferSelect selects a buffer from sqe->buf_group (IOSQE_BUFFER_SELECT).
	sqeBufferSelect = 1 << 5
)

// sqe->ioprio flags for accept, send and recv (io_uring.h).
const (
	acceptMultishot = 1 << 0 // IORING_ACCEPT_MULTISHOT, 5.19
	recvMultishot   = 1 << 1 // IORING_RECV_MULTISHOT, 6.0
)

// sqe->cancel_flags (io_uring.h: IORING_ASYNC_CANCEL_*).
const (
	cancelAll = 1 << 0 // IORING_ASYNC_CANCEL_ALL: every match, not the first
	cancelFD  = 1 << 1 // IORING_ASYNC_CANCEL_FD: match on sqe->fd
	cancelAny = 1 << 2 // IORING_ASYNC_CANCEL_ANY: match every request
)

// cqe->flags (io_uring.h: IORING_CQE_F_*).
const (
	// CQEFBuffer: the completion used a provided buffer, whose id is in the
	// upper 16 bits of the flags (IORING_CQE_F_BUFFER).
	CQEFBuffer = 1 << 0
	// CQEFMore: the operation stays armed and will post more completions
	// (IORING_CQE_F_MORE); its absence ends a multishot operation.
	CQEFMore = 1 << 1
	// CQEFSockNonempty: the socket had more data after this recv
	// (IORING_CQE_F_SOCK_NONEMPTY).
	CQEFSockNonempty = 1 << 2
	// cqeBufferShift is IORING_CQE_BUFFER_SHIFT.
	cqeBufferShift = 16
)

// io_uring_register(2) opcodes (io_uring.h: enum io_uring_register_op).
const (
	registerProbe         = 8  // IORING_REGISTER_PROBE, 5.6
	registerPbufRing      = 22 // IORING_REGISTER_PBUF_RING, 5.19
	unregisterPbufRing    = 23 // IORING_UNREGISTER_PBUF_RING, 5.19
	probeOpSupported      = 1 << 0
	probeOpsCapacity      = 256 // the probe's ops[] is indexed by a __u8 opcode
	maxBufRingEntries     = 1 << 15
	sizeofSQE             = 64 // struct io_uring_sqe without IORING_SETUP_SQE128
	sizeofCQE             = 16 // struct io_uring_cqe without IORING_SETUP_CQE32
	sizeofBufRingEntry    = 16 // struct io_uring_buf
	bufRingTailWordOffset = 12 // struct io_uring_buf_ring: bufs[0].bid (12) and tail (14) share the aligned word at 12
)
