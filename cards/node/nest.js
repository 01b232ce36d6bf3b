// @nestjs/throttler as Nest's documentation sets it up: ThrottlerModule
// .forRoot with one throttler (CARD_LIMIT requests per CARD_WINDOW_MS) and
// ThrottlerGuard as the application's guard, on its own in-memory storage
// (ThrottlerStorageService), in front of a controller that answers 200.
// The tracker is the X-User header (getTracker; the default, the client's
// IP, is every user of the grader at once). CARD_BLOCK_MS, when set, is the
// throttler's blockDuration (its default is the ttl). Plain JavaScript: the
// decorators TypeScript would apply are applied by hand.
"use strict";

require("reflect-metadata");
const { NestFactory, APP_GUARD } = require("@nestjs/core");
const { Module, Controller, Get } = require("@nestjs/common");
const { ThrottlerModule, ThrottlerGuard } = require("@nestjs/throttler");
const { env } = require("./common");

const e = env();

class AppController {
  ok() {
    return "ok\n";
  }
}
Reflect.decorate([Get()], AppController.prototype, "ok", Object.getOwnPropertyDescriptor(AppController.prototype, "ok"));
Reflect.decorate([Controller()], AppController);

const throttler = { ttl: e.windowMs, limit: e.limit };
if (process.env.CARD_BLOCK_MS !== undefined) {
  const block = Number(process.env.CARD_BLOCK_MS);
  if (!Number.isSafeInteger(block) || block < 0) throw new Error("CARD_BLOCK_MS: want a whole number of milliseconds");
  throttler.blockDuration = block;
}

class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [throttler],
          getTracker: (req) => req.headers["x-user"] || "",
        }),
      ],
      controllers: [AppController],
      providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    }),
  ],
  AppModule,
);

async function main() {
  const app = await NestFactory.create(AppModule, { logger: ["error", "warn"] });
  app.enableShutdownHooks();
  await app.listen(e.port, "127.0.0.1");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
