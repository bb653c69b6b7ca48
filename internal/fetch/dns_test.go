package fetch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a DNS server on loopback that answers A queries from a
// function of the name and the number of times it was asked, so that tests
// resolve names without touching the network and can play DNS rebinding.
type fakeDNS struct {
	mu     sync.Mutex
	asked  map[string]int
	answer func(name string, n int) []netip.Addr // nil: NXDOMAIN
}

// startFakeDNS starts a fakeDNS and returns a resolver that queries only it.
func startFakeDNS(t *testing.T, answer func(name string, n int) []netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{asked: map[string]int{}, answer: answer}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, err := d.reply(buf[:n]); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", addr)
	}}
}

func (d *fakeDNS) reply(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(q.Name.String(), ".")
	d.mu.Lock()
	if q.Type == dnsmessage.TypeA {
		d.asked[name]++
	}
	ips := d.answer(name, d.asked[name])
	d.mu.Unlock()

	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true},
		Questions: []dnsmessage.Question{q},
	}
	if ips == nil {
		msg.Header.RCode = dnsmessage.RCodeNameError
	}
	for _, ip := range ips {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET}
		switch {
		case q.Type == dnsmessage.TypeA && ip.Is4():
			rh.Type = dnsmessage.TypeA
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AResource{A: ip.As4()}})
		case q.Type == dnsmessage.TypeAAAA && ip.Is6():
			rh.Type = dnsmessage.TypeAAAA
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AAAAResource{AAAA: ip.As16()}})
		}
	}
	return msg.Pack()
}

// testZone answers for the names the tests use.
func testZone(name string, n int) []netip.Addr {
	switch name {
	case "internal.test", "2130706433", "0x7f.1", "127.1", "0177.0.0.1":
		return addrs("127.0.0.1")
	case "metadata.test":
		return addrs("169.254.169.254")
	case "v6.test":
		return addrs("::1")
	case "rebind.test":
		// Public when the URL is registered, loopback when it is fetched.
		if n == 1 {
			return addrs("93.184.216.34")
		}
		return addrs("127.0.0.1")
	}
	return nil
}

func TestDialGuardResolvedNames(t *testing.T) {
	var hits atomic.Int64
	srv, conns := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		htmlHandler(testPage)(w, r)
	}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	cfg := Config{IgnoreRobots: true}
	cfg.dialResolver = startFakeDNS(t, testZone)
	c := newClient(t, cfg)

	for _, host := range []string{"internal.test", "metadata.test", "v6.test"} {
		_, err := c.Fetch(context.Background(), Request{URL: fmt.Sprintf("http://%s:%d/", host, port)})
		wantKind(t, err, KindBlocked)
		t.Logf("%s: %v", host, err)
	}
	// Straight through the transport, past Fetch's own URL check. Go's
	// resolver refuses all-numeric names itself ("no such host"); a C
	// library resolver would read them as 127.0.0.1, and a DNS server may
	// answer 127.0.0.1 for anything (as the fake one does for 0x7f.1):
	// then the guard refuses the address.
	for _, host := range []string{"2130706433", "0x7f.1", "127.1", "0177.0.0.1"} {
		resp, err := c.direct.hc.Get(fmt.Sprintf("http://%s:%d/", host, port))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: the transport connected", host)
			continue
		}
		if !strings.Contains(err.Error(), "loopback") && !strings.Contains(err.Error(), "no such host") {
			t.Errorf("%s: %v", host, err)
		}
		t.Logf("%s: %v", host, err)
	}
	if hits.Load() != 0 || conns.Load() != 0 {
		t.Fatalf("the guarded client reached the server: %d requests, %d connections", hits.Load(), conns.Load())
	}
}

func TestDNSRebinding(t *testing.T) {
	var hits atomic.Int64
	srv, conns := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		htmlHandler("<p>internal</p>")(w, r)
	}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resolver := startFakeDNS(t, testZone)
	u := fmt.Sprintf("http://rebind.test:%d/", port)

	// At registration the name resolves to a public address…
	if err := CheckURL(context.Background(), u, false, resolver); err != nil {
		t.Fatalf("CheckURL: %v", err)
	}
	// …and when fetched, to loopback: the dial-time guard catches it.
	cfg := Config{IgnoreRobots: true}
	cfg.dialResolver = resolver
	c := newClient(t, cfg)
	_, err := c.Fetch(context.Background(), Request{URL: u})
	wantKind(t, err, KindBlocked)
	if hits.Load() != 0 || conns.Load() != 0 {
		t.Fatalf("DNS rebinding reached the server: %d requests, %d connections", hits.Load(), conns.Load())
	}
	// The registration check itself refuses the name once it rebinds.
	if err := CheckURL(context.Background(), u, false, resolver); KindOf(err) != KindBlocked {
		t.Errorf("CheckURL after rebinding: %v", err)
	}
}

func TestFetchDNSError(t *testing.T) {
	cfg := Config{IgnoreRobots: true}
	cfg.dialResolver = startFakeDNS(t, testZone)
	c := newClient(t, cfg)
	res, err := c.Fetch(context.Background(), Request{URL: "http://nosuch.test/"})
	wantKind(t, err, KindDNS)
	if res.Status != 0 || !strings.Contains(err.Error(), "no such host") {
		t.Errorf("status %d, %q", res.Status, err)
	}
	// CheckURL reports the same through a *net.Resolver.
	err = CheckURL(context.Background(), "http://nosuch.test/", false, cfg.dialResolver)
	wantKind(t, err, KindDNS)
}
