# Builds the five portalwatch programs into one small image; docker-compose.yml
# runs each program in its own container from it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/scheduler ./cmd/crawler ./cmd/processor ./cmd/watchctl ./cmd/web ./cmd/notifier ./cmd/extractor

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 portalwatch \
    && mkdir -p /var/lib/portalwatch/archive && chown -R portalwatch /var/lib/portalwatch
COPY --from=build /out/ /usr/local/bin/
USER portalwatch
# Each program serves /healthz and /metrics here.
ENV PORTALWATCH_HTTP_ADDR=0.0.0.0:9100
# The archive (a volume in docker-compose.yml); its owner is the user above,
# so a new named volume starts writable.
ENV PORTALWATCH_DATA_DIR=/var/lib/portalwatch
EXPOSE 9100
