# syntax=docker/dockerfile:1
# The asset service on Node 24, in three stages: build (all dependencies, `npm run build`), deps (production
# dependencies only) and runtime (non-root, with ffmpeg). Containers use an external PostgreSQL (DATABASE_URL): the embedded
# PostgreSQL of `npm start` is not used here. See "Running at scale" in README.md and docker-compose.yml.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`: the lockfile lacks other platforms' optional packages, which `npm ci` refuses.
RUN npm install --no-audit --no-fund
COPY . .
# Generates the Prisma client and compiles TypeScript (needs the dev dependencies typescript and prisma).
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# ffmpeg makes the thumbnails of videos (without it, videos get none; images need only sharp's own libvips).
RUN apt-get update \
  && apt-get install -y --no-install-recommends ffmpeg \
  && rm -rf /var/lib/apt/lists/*
# The commit this image is built from, for GET /version and assets_build_info (no .git is copied into the image):
# docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) .
ARG GIT_COMMIT=
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data GIT_COMMIT=${GIT_COMMIT}
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/prisma ./prisma
COPY --from=build /app/package.json /app/package-lock.json /app/openapi.yaml /app/schema.graphql ./
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
# /readyz: database, blob store and job queue usable; every role serves it (a worker only its probes and /metrics).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Operator commands run in a container of this image without a build, e.g.
#   docker compose exec assets node dist/src/cli/keys.js create --owner alice   (npm run keys:built -- … alike)
# V8's heap bounds, as package.json's start:built (docs/operations.md, "Memory"; a unit test keeps them equal).
ENTRYPOINT ["node", "--max-semi-space-size=16", "--max-old-space-size=1024", "dist/src/main.js"]
CMD ["--role", "all"]
