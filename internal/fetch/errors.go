package fetch

import "github.com/portalwatch/portalwatch/internal/watch"

// The fetcher's errors are watch's, so that services classify them without
// importing this package; these names keep the fetcher's own code readable.
type (
	// Kind is watch.FetchKind.
	Kind = watch.FetchKind
	// Error is watch.FetchError, the error Fetch and CheckURL return.
	Error = watch.FetchError
)

// The kinds of Error; see watch.FetchKind.
const (
	KindUnknown          = watch.FetchUnknown
	KindBadURL           = watch.FetchBadURL
	KindBlocked          = watch.FetchBlocked
	KindDisallowed       = watch.FetchDisallowed
	KindDNS              = watch.FetchDNS
	KindNetwork          = watch.FetchNetwork
	KindTimeout          = watch.FetchTimeout
	KindCanceled         = watch.FetchCanceled
	KindTooManyRedirects = watch.FetchTooManyRedirects
	KindHTTPStatus       = watch.FetchHTTPStatus
	KindTooLarge         = watch.FetchTooLarge
	KindNotHTML          = watch.FetchNotHTML
	KindBadResponse      = watch.FetchBadResponse
	KindDeferred         = watch.FetchDeferred
	KindProxy            = watch.FetchProxy
)

// KindOf returns the Kind of err when it is or wraps an *Error, and
// KindUnknown otherwise.
func KindOf(err error) Kind { return watch.FetchKindOf(err) }
