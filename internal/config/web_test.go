package config

import (
	"strings"
	"testing"
)

func TestWebSettings(t *testing.T) {
	c, err := Load(func(string) string { return "" })
	if err != nil || c.Web.Addr != "127.0.0.1:8080" || c.Web.PublicRead {
		t.Fatalf("defaults: %+v %v", c.Web, err)
	}
	env := map[string]string{"PORTALWATCH_WEB_ADDR": ":9000", "PORTALWATCH_WEB_PUBLIC_READ": "true"}
	c, err = Load(func(k string) string { return env[k] })
	if err != nil || c.Web.Addr != ":9000" || !c.Web.PublicRead {
		t.Fatalf("set: %+v %v", c.Web, err)
	}
	for _, bad := range []map[string]string{
		{"PORTALWATCH_WEB_ADDR": "8080"},
		{"PORTALWATCH_WEB_ADDR": "localhost:http-alt"},
		{"PORTALWATCH_WEB_ADDR": "127.0.0.1:70000"},
		{"PORTALWATCH_WEB_PUBLIC_READ": "maybe"},
	} {
		_, err := Load(func(k string) string { return bad[k] })
		for k := range bad {
			if err == nil || !strings.Contains(err.Error(), k) || strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("%v: error %v, want one line naming %s", bad, err, k)
			}
		}
	}
}
