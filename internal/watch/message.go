package watch

// Message and Delivery are what a service publishes and consumes; the queue
// adapter carries them over AMQP, so a service names no type of the broker's
// client.

// Message is one message to publish.
type Message struct {
	Body    []byte
	Headers map[string]string
}

// Delivery is one message handed to a Handler.
type Delivery struct {
	Body []byte
	// Redelivered is true when the broker may have delivered the message
	// before (to this or another consumer).
	Redelivered bool
	// DeliveryCount is how many times the message was returned to the queue
	// before this delivery (RabbitMQ's x-delivery-count), 0 at first.
	DeliveryCount int64
}
