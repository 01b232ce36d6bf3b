# rack-attack (Debian's ruby-rack-attack) as its README sets it up: a
# throttle of CARD_LIMIT requests per CARD_PERIOD seconds per value of the
# X-User header, on a plain Redis client (rack-attack's RedisProxy), in
# front of an app that answers 200. Served by puma with several workers and
# threads (cards/ruby/serve). Its keys live under RLCONFORM_KEY_PREFIX.
require 'redis'
require 'rack/attack'

Rack::Attack.cache.store = Redis.new(url: ENV.fetch('RLCONFORM_REDIS_URL'))
Rack::Attack.cache.prefix = "#{ENV.fetch('RLCONFORM_KEY_PREFIX', '')}rack::attack"

Rack::Attack.throttle('req/user', limit: Integer(ENV.fetch('CARD_LIMIT', '5')), period: Integer(ENV.fetch('CARD_PERIOD', '1'))) do |req|
  req.get_header('HTTP_X_USER')
end

use Rack::Attack
run ->(_env) { [200, { 'content-type' => 'text/plain' }, ["ok\n"]] }
