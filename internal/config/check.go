package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// FieldError says that a config field holds a value its component cannot
// work with. Validate methods return it through the helpers below; Load
// reports it under the field's variable.
type FieldError struct {
	// Field is the Go field's path from the struct whose Validate returned
	// it: "MaxTaskBytes", or "Caps.PerCheck" for a field of a nested struct.
	Field string
	// Value is the field's value.
	Value any
	// Want says what would do, as in "want 1 to 1000". Another field of
	// the same struct is written in braces, "{RetryMax}", so that Load can
	// name its variable.
	Want string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s is %s: %s", e.Field, format(reflect.ValueOf(e.Value)), e.want(func(f string) string { return f }))
}

// want is Want with each {Field} replaced by name(Field).
func (e *FieldError) want(name func(field string) string) string {
	var b strings.Builder
	rest := e.Want
	for {
		open := strings.IndexByte(rest, '{')
		end := strings.IndexByte(rest[max(open, 0):], '}')
		if open < 0 || end < 0 {
			b.WriteString(rest)
			return b.String()
		}
		end += open
		b.WriteString(rest[:open])
		b.WriteString(name(rest[open+1 : end]))
		rest = rest[end+1:]
	}
}

// Invalid returns a FieldError for field holding v, which wants what want
// says ("want …").
func Invalid(field string, v any, want string) error {
	return &FieldError{Field: field, Value: v, Want: want}
}

// Between returns nil when lo <= v <= hi, and a FieldError saying so
// otherwise.
func Between[T cmp.Ordered](field string, v, lo, hi T) error {
	if v >= lo && v <= hi && v == v {
		return nil
	}
	return Invalid(field, v, fmt.Sprintf("want %s from %s to %s", kind(v), show(lo), show(hi)))
}

// AtLeast returns nil when v >= lo, and a FieldError saying so otherwise.
func AtLeast[T cmp.Ordered](field string, v, lo T) error {
	if v >= lo && v == v {
		return nil
	}
	return Invalid(field, v, fmt.Sprintf("want %s of at least %s", kind(v), show(lo)))
}

// OneOf returns nil when v is one of allowed.
func OneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return Invalid(field, v, "want "+strings.Join(allowed[:len(allowed)-1], ", ")+" or "+allowed[len(allowed)-1])
}

func kind(v any) string {
	switch v.(type) {
	case time.Duration:
		return "a duration"
	case float32, float64:
		return "a number"
	case string:
		return "a value"
	}
	return "a whole number"
}

func show(v any) string {
	if d, ok := v.(time.Duration); ok {
		return FormatDuration(d)
	}
	return fmt.Sprint(v)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)

// Name checks a name that becomes part of a queue's or a key's name: 1 to
// 200 letters, digits, '_', '.', ':' or '-'.
func Name(field, v string) error {
	if nameRE.MatchString(v) {
		return nil
	}
	return Invalid(field, v, "use 1 to 200 letters, digits, '_', '.', ':' or '-'")
}

// HostPort checks a listening address, host:port with a port number, such
// as 127.0.0.1:8080 or :8080.
func HostPort(field, v string) error {
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = errors.New("port out of range")
		}
	}
	if err != nil {
		return Invalid(field, v, "want host:port, such as 127.0.0.1:8080 or :8080")
	}
	return nil
}

// URL checks that raw is a URL with one of schemes. Its FieldError never
// holds the URL's password.
func URL(field, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL, password included, in its error:
		// keep only its reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Invalid(field, RedactURL(raw), fmt.Sprintf("not a valid URL: %v", err))
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return Invalid(field, u.Redacted(), "want a URL starting with "+strings.Join(schemes, ":// or ")+"://")
}

// RedactURL returns raw with the password of its user information replaced
// by "xxxxx", whether or not raw parses as a URL, so that an error or log
// line about a connection URL never carries a credential. A URL without a
// password is returned as it is.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if _, has := u.User.Password(); !has {
			return raw
		}
		return u.Redacted()
	}
	// Unparsable (a bad port, say): the user information is what lies
	// between "://" and the last "@" before the path.
	start := strings.Index(raw, "://")
	if start < 0 {
		start = 0
	} else {
		start += len("://")
	}
	rest := raw[start:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return raw
	}
	return raw[:start] + user + ":xxxxx" + rest[at:]
}
