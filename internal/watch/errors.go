package watch

import (
	"errors"
	"slices"
	"strings"
)

// ErrPermanent marks a failure that no retry can fix: a message that cannot
// be decoded, data the database refuses. It is the one spelling of "do not
// retry": adapters translate their drivers' errors into it at their boundary
// (the store a refused statement, the fetcher a 404 or a bad URL, see
// FetchKind) and the queue dead-letters a message whose handler returns it.
// Test for it with errors.Is.
var ErrPermanent = errors.New("permanent failure")

// ErrMalformed marks a message that can never be handled, however often it is
// delivered: it is permanent (errors.Is(err, ErrPermanent) holds) and goes to
// the dead-letter queue at once.
var ErrMalformed error = permanentSentinel("malformed message")

// permanentSentinel is a sentinel of its own that is also ErrPermanent, so
// its message names the specific failure.
type permanentSentinel string

func (e permanentSentinel) Error() string        { return string(e) }
func (e permanentSentinel) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as permanent without changing its message: errors.Is
// finds both ErrPermanent and whatever err wraps. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ err error }

func (e permanentError) Error() string        { return e.err.Error() }
func (e permanentError) Unwrap() error        { return e.err }
func (e permanentError) Is(target error) bool { return target == ErrPermanent }

// IsPermanent reports whether err is, or wraps, ErrPermanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// RefusedError says that what a person asked to store breaks a rule: show
// the message (one line, naming the rule and the limit) and store nothing.
// Any other error of a check means the input could not be checked (a name
// lookup timed out, say), which a retry may cure.
type RefusedError struct {
	// Field names what was refused, as the API's JSON names it: "url",
	// "interval", "name", "tags", one of the option lists ("ignore",
	// "within", "exclude", "includeText", "excludeText", "includeUrl",
	// "excludeUrl"), "options" for a cap that spans several lists, or a
	// subscription's "tag", "address", "url" or "wait_article".
	Field string
	Err   error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused returns a *RefusedError for field, or nil for a nil err.
func Refused(field string, err error) error {
	if err == nil {
		return nil
	}
	var already *RefusedError
	if errors.As(err, &already) {
		return err
	}
	return &RefusedError{Field: field, Err: err}
}

// Refusals are every rule one input broke, so that a person mends them all
// at once: a form shows each beside its field, the API lists them.
type Refusals []*RefusedError

func (r Refusals) Error() string {
	msgs := make([]string, len(r))
	for i, e := range r {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns each refusal, for errors.As and errors.Is.
func (r Refusals) Unwrap() []error {
	errs := make([]error, len(r))
	for i, e := range r {
		errs[i] = e
	}
	return errs
}

// JoinRefused returns the refusals among errs as one error: nil when every
// one is nil, the *RefusedError itself when there is one, else Refusals.
// An error that is not a refusal (a name lookup that timed out) is
// returned alone: the input could not be checked, which is no rule broken.
func JoinRefused(errs ...error) error {
	var all Refusals
	for _, err := range errs {
		if err == nil {
			continue
		}
		got := RefusalsOf(err)
		if got == nil {
			return err
		}
		// Two checks of one rule (the domain's and the selector
		// grammar's) may refuse alike: say it once.
		for _, r := range got {
			if !slices.ContainsFunc(all, func(o *RefusedError) bool { return o.Field == r.Field && o.Error() == r.Error() }) {
				all = append(all, r)
			}
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return all
}

// RefusalsOf returns every refusal err holds, in order; nil when it holds
// none.
func RefusalsOf(err error) Refusals {
	var many Refusals
	if errors.As(err, &many) {
		return many
	}
	var one *RefusedError
	if errors.As(err, &one) {
		return Refusals{one}
	}
	return nil
}
