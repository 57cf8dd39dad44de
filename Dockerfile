# One image for every component; the component is the argument:
#
#   docker build -t billing-loader .
#   docker run --rm billing-loader migrate
#   docker run -p 8080:8080 billing-loader ingress      # likewise enricher, sink, dashboard, …
#
# NODE_IMAGE is the base of both stages. Its default is the official Node.js image of the
# current LTS line; any image with `node` and `npm` on the path and a `node` user (uid 1000)
# will do (the project's own test builds on a local one: test/helpers/image.ts).
ARG NODE_IMAGE=node:26-bookworm-slim

# --- build: every dependency (TypeScript and the type packages), compile, then drop the dev ones.
FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
# The postinstall script applies the project's kafkajs patches (patches/, docs/ARCHITECTURE.md,
# "kafkajs patches"); without them the image would run kafkajs unpatched.
COPY patches ./patches
# --prefer-offline: packages already in npm's cache (a cache mounted into the build, as the tests
# do) are not checked with the registry again; the lock file's integrity hashes still apply.
RUN npm ci --no-audit --no-fund --prefer-offline
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run --silent build \
 && npm prune --omit=dev --no-audit --no-fund

# --- runtime: production dependencies, the compiled code and the files it reads; nothing else.
FROM ${NODE_IMAGE}
# TimeoutNegativeWarning: kafkajs 2.2.4 asks for negative timers, which Node.js 24 and later
# report on stderr as a plain-text line among the JSON log (https://github.com/tulios/kafkajs/issues/1751);
# the timer runs at once, as it always did.
ENV NODE_ENV=production \
    NODE_OPTIONS=--disable-warning=TimeoutNegativeWarning \
    ENRICHER_STATE_DIR=/var/lib/billing-loader/enricher
WORKDIR /app
# Owned by root and read-only to the loader's user: the running process cannot change its code.
COPY package.json ./
COPY bin ./bin
COPY schemas ./schemas
COPY migrations ./migrations
COPY warehouse ./warehouse
COPY dashboard ./dashboard
COPY --from=build /build/node_modules ./node_modules
COPY --from=build /build/dist ./dist
# The enricher's heads (LMDB files): mount a volume here to keep them across re-creates.
RUN mkdir -p /var/lib/billing-loader/enricher && chown -R node:node /var/lib/billing-loader
USER node
# node is PID 1 (exec form, no shell in front): `docker stop`'s SIGTERM reaches the loader, which
# drains and exits 0. Ports: ingress 8080, enricher 8081, sink 8082, dashboard 8090 (the settings'
# defaults; OPS_PORT moves the ops endpoints).
STOPSIGNAL SIGTERM
EXPOSE 8080 8081 8082 8090
ENTRYPOINT ["node", "bin/billing-loader.js"]
CMD ["--help"]
