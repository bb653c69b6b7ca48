package testsvc

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
)

func TestPrivateServersStartRestartAndKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private servers")
	}
	rd := StartRedis(t)
	pg := StartPostgres(t)
	mq := StartRabbitMQ(t)

	conn, err := pgx.Connect(context.Background(), pg.AdminURL())
	if err != nil {
		t.Fatalf("connect to private PostgreSQL: %v", err)
	}
	conn.Close(context.Background())
	c, err := amqp.Dial(mq.URL())
	if err != nil {
		t.Fatalf("connect to private RabbitMQ: %v", err)
	}
	c.Close()

	pg.Kill()
	pg.Start() // crash recovery
	mq.Restart()
	rd.Restart()
	if _, err := amqp.Dial(mq.URL()); err != nil {
		t.Fatalf("RabbitMQ after restart: %v", err)
	}
	if err := redisPing(rd.Port()); err != nil {
		t.Fatalf("Redis after restart: %v", err)
	}
	conn, err = pgx.Connect(context.Background(), pg.AdminURL())
	if err != nil {
		t.Fatalf("PostgreSQL after a crash: %v", err)
	}
	conn.Close(context.Background())
}
