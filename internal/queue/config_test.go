package queue_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestConstructorsRefuseInvalidConfig: a value no default can mend is an
// error from the constructor, naming the field, instead of a silent default.
func TestConstructorsRefuseInvalidConfig(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	handle := func(context.Context, watch.Delivery) error { return nil }
	bad := queue.Config{URL: "amqp://127.0.0.1:1/", Heartbeat: -time.Second}
	if _, err := queue.NewPublisher(bad, log, "q"); err == nil || !strings.Contains(err.Error(), "Heartbeat") {
		t.Errorf("NewPublisher(%+v) = %v, want an error naming Heartbeat", bad, err)
	}
	if _, err := queue.NewDead(bad); err == nil || !strings.Contains(err.Error(), "Heartbeat") {
		t.Errorf("NewDead(%+v) = %v, want an error naming Heartbeat", bad, err)
	}
	ok := queue.Config{URL: "amqp://127.0.0.1:1/"}
	for _, tt := range []struct {
		cfg   queue.ConsumerConfig
		field string
	}{
		{queue.ConsumerConfig{Config: ok}, "Queue"},
		{queue.ConsumerConfig{Config: ok, Queue: "q", Workers: -1}, "Workers"},
		{queue.ConsumerConfig{Config: ok, Queue: "q", Prefetch: 1 << 16}, "Prefetch"},
		{queue.ConsumerConfig{Config: ok, Queue: "q", DrainTimeout: -time.Second}, "DrainTimeout"},
		{queue.ConsumerConfig{Config: ok, Queue: "q", MaxHold: -time.Second}, "MaxHold"},
		{queue.ConsumerConfig{Config: ok, Queue: "q", MaxHold: queue.MaxHoldLimit + time.Second}, "MaxHold"},
		{queue.ConsumerConfig{Config: bad, Queue: "q"}, "Heartbeat"},
	} {
		if _, err := queue.NewConsumer(tt.cfg, log, handle, nil); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("NewConsumer(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
		}
	}
	c := queue.ConsumerConfig{Queue: "q"}.WithDefaults()
	if c.Workers != queue.DefaultWorkers || c.Prefetch != c.Workers || c.DrainTimeout != queue.DefaultDrainTimeout ||
		c.AckDelay != queue.DefaultAckDelay || c.DeliveryLimit != queue.DefaultDeliveryLimit || c.MaxHold != queue.DefaultMaxHold {
		t.Errorf("defaults = %+v", c)
	}
}
