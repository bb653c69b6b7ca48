package watch_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestLater(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 4, 5, 250_000_000, time.UTC)
	slot := &watch.Later{At: at, Reason: "fetch slot booked"}
	tests := []struct {
		name string
		err  error
		want *watch.Later // nil: not a Later
		msg  string
	}{
		{"plain", slot, slot, "handle again at 2026-12-03T10:04:05.25Z: fetch slot booked"},
		{"wrapped", fmt.Errorf("check page 7: %w", slot), slot, "check page 7: handle again at 2026-12-03T10:04:05.25Z: fetch slot booked"},
		{"no reason", &watch.Later{At: at}, &watch.Later{At: at}, "handle again at 2026-12-03T10:04:05.25Z"},
		{"at once", &watch.Later{Reason: "origin busy"}, &watch.Later{Reason: "origin busy"}, "handle again at once: origin busy"},
		{"permanent is no Later", watch.Permanent(errors.New("404")), nil, "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *watch.Later
			found := errors.As(tt.err, &got)
			switch {
			case found != (tt.want != nil):
				t.Errorf("errors.As(%v, *Later) = %v, want %v", tt.err, found, tt.want != nil)
			case found && (!got.At.Equal(tt.want.At) || got.Reason != tt.want.Reason):
				t.Errorf("errors.As found %+v, want %+v", got, tt.want)
			}
			if msg := tt.err.Error(); msg != tt.msg {
				t.Errorf("Error() = %q, want %q", msg, tt.msg)
			}
		})
	}
	if msg := (*watch.Later)(nil).Error(); msg == "" {
		t.Error("a nil *Later's Error() is empty")
	}
}
