# Builds the portalwatch programs. The default image (the last stage) holds
# every program but the renderer and stays small; the renderer's image
# (target "renderer") adds Debian's chromium. docker-compose.yml runs each
# program in its own container from them.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/scheduler ./cmd/crawler ./cmd/processor ./cmd/watchctl ./cmd/web ./cmd/notifier ./cmd/extractor \
    && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /renderer/ ./cmd/renderer

# The renderer with headless Chromium. Docker's default seccomp profile
# refuses the user namespaces Chromium's sandbox needs, so it runs with
# --no-sandbox here, as an unprivileged user, its network reached only
# through the renderer's guarded proxy (README, "Pages that need
# JavaScript").
FROM debian:bookworm-slim AS renderer
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates chromium fonts-liberation \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home portalwatch
COPY --from=build /renderer/renderer /usr/local/bin/renderer
USER portalwatch
ENV PORTALWATCH_HTTP_ADDR=0.0.0.0:9100 PORTALWATCH_RENDER_NO_SANDBOX=true
EXPOSE 9100
CMD ["renderer"]

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
