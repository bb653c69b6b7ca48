package watch

import (
	stdjson "encoding/json"
	"fmt"
	"testing"
)

// Keys travel as one base64 string, and the state round-trips through a
// job, an empty followed set included; the arrays of numbers of jobs from
// before migration 00012 still decode, as a state not to be trusted.
func TestFollowedInAJob(t *testing.T) {
	t.Parallel()
	for _, f := range []Followed{
		{Checks: 7, Base: Keys{1, -2, 1 << 62}, Added: Keys{9}, Gone: Keys{1}, Pending: Keys{-5}, PendingSince: []int64{6}},
		{Checks: 3, Base: Keys{}},
		{Checks: 0, Afresh: true},
	} {
		body, err := EncodeJob(Job{ID: 1, BaseURL: "https://p.example/", Followed: &f})
		if err != nil {
			t.Fatal(err)
		}
		var std Job
		if err := stdjson.Unmarshal(body, &std); err != nil {
			t.Fatalf("encoding/json cannot read %s: %v", body, err)
		}
		j, err := DecodeJob(body)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(*j.Followed) != fmt.Sprint(f) || fmt.Sprint(*std.Followed) != fmt.Sprint(f) || !j.Followed.Known() {
			t.Errorf("%s decodes to %+v (encoding/json: %+v), want %+v, known", body, *j.Followed, *std.Followed, f)
		}
	}
	old, err := DecodeJob([]byte(`{"baseUrl":"https://p.example/","id":1,"followed":{"checks":7,"buckets":[1,2],"pending":[5,-6],"pendingSince":[3,4],"gone":[]}}`))
	if err != nil {
		t.Fatalf("a job of 00011's scheduler: %v", err)
	}
	if old.Followed.Known() || fmt.Sprint(old.Followed.Pending) != "[5 -6]" {
		t.Errorf("a job of 00011's scheduler decodes to %+v, known %t; want its pending keys, not known", *old.Followed, old.Followed.Known())
	}
	if _, err := DecodeJob([]byte(`{"id":1,"followed":{"base":"AAE="}}`)); err == nil {
		t.Error("a base of 2 bytes decoded")
	}
}
