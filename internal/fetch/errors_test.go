package fetch

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A certificate is the server's to write: one naming "a\x00b" once made the
// error text carry a NUL, which PostgreSQL refuses, so the page's failure was
// never recorded. The message must come out clean.
func TestErrorTextFromACertificateIsClean(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "a\x00b\u202e"},
		DNSNames:     []string{"a\x00b.example", "a\x00b"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(htmlHandler(testPage))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/"
	_, err = c.Fetch(context.Background(), Request{URL: url})
	if err == nil {
		t.Fatal("Fetch of a server with a bad certificate succeeded")
	}
	msg := err.Error()
	t.Logf("error: %q", msg)
	if strings.ContainsAny(msg, "\x00\u202e") {
		t.Fatalf("error text %q carries a NUL or a bidi override", msg)
	}
}

func TestErrorDescriptionIsCleaned(t *testing.T) {
	e := &Error{Kind: KindNetwork, URL: "https://x.example/", Err: errString("tls: a\x00b \x1b[31m\u202eevil\u009b")}
	if got, want := e.Error(), "https://x.example/: tls: ab [31mevil"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
