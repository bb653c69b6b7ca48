package watch_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestPermanent(t *testing.T) {
	cause := errors.New("value too long for type character varying(8)")
	tests := []struct {
		name      string
		err       error
		permanent bool
		msg       string
	}{
		{"nil", watch.Permanent(nil), false, ""},
		{"a plain error", cause, false, cause.Error()},
		{"marked", watch.Permanent(cause), true, cause.Error()},
		{"marked then wrapped", fmt.Errorf("record check of page 7: %w", watch.Permanent(cause)), true, "record check of page 7: " + cause.Error()},
		{"malformed", fmt.Errorf("%w: missing baseUrl", watch.ErrMalformed), true, "malformed message: missing baseUrl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := watch.IsPermanent(tt.err); got != tt.permanent {
				t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.permanent)
			}
			if tt.err != nil && tt.err.Error() != tt.msg {
				t.Errorf("message = %q, want %q: marking an error permanent must not change what it says", tt.err.Error(), tt.msg)
			}
		})
	}
	if err := watch.Permanent(cause); !errors.Is(err, cause) {
		t.Errorf("Permanent(cause) hides its cause from errors.Is")
	}
	if errors.Is(watch.ErrPermanent, watch.ErrMalformed) {
		t.Errorf("every permanent error counts as malformed; only the reverse holds")
	}
}
