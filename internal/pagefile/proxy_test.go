package pagefile

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A list carries the proxy's name both ways, and a checked import refuses
// a row naming a proxy the deployment has not.
func TestListsCarryTheProxy(t *testing.T) {
	pages := []watch.Page{
		{ID: 1, BaseURL: "http://93.184.216.34/", Interval: time.Minute, Enabled: true, Proxy: "corp"},
		{ID: 2, BaseURL: "http://93.184.216.35/", Interval: time.Minute, Enabled: true},
	}
	for _, format := range []string{CSV, OPML} {
		var b bytes.Buffer
		if err := Write(&b, format, pages); err != nil {
			t.Fatal(err)
		}
		rows, err := Read(bytes.NewReader(b.Bytes()), format)
		if err != nil || len(rows) != 2 || rows[0].Err != nil {
			t.Fatalf("%s read back: %+v, %v", format, rows, err)
		}
		if rows[0].Page.Proxy != "corp" || rows[1].Page.Proxy != "" {
			t.Errorf("%s proxies read back: %q, %q", format, rows[0].Page.Proxy, rows[1].Page.Proxy)
		}
		pol := registration.Policy{GuardURL: func(context.Context, string) error { return nil }, Proxies: []string{"eu"}}
		list, err := ReadChecked(context.Background(), pol, bytes.NewReader(b.Bytes()), format)
		if err != nil {
			t.Fatal(err)
		}
		var bad *BadRowsError
		if err := list.Err(); !errors.As(err, &bad) || !strings.Contains(err.Error(), `proxy "corp" is not configured: PORTALWATCH_PROXIES names eu`) {
			t.Errorf("%s import with an unknown proxy: %v", format, err)
		}
		pol.Proxies = []string{"corp"}
		list, err = ReadChecked(context.Background(), pol, bytes.NewReader(b.Bytes()), format)
		if err != nil || list.Len() != 2 || list.Err() != nil {
			t.Fatalf("%s import with corp configured: %v", format, err)
		}
		var proxies []string
		for p := range list.Pages() {
			proxies = append(proxies, p.Proxy)
		}
		if strings.Join(proxies, ",") != "corp," {
			t.Errorf("%s pages to store have proxies %q", format, proxies)
		}
	}
}
