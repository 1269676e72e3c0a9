# Byte echo on EventMachine as its documentation writes it: the getting
# started guide's echo server (examples/guides/getting_started/
# 01_eventmachine_echo_server.rb, the README's EchoServer with the echo left
# plain), as it is:
#
#   class EchoServer < EM::Connection
#     def receive_data(data)
#       send_data(data)
#     end
#   end
#
# send_data appends a copy of every chunk read to the connection's outbound
# pages (ConnectionDescriptor::_SendRawOutboundData in ext/ed.cpp: "There's no
# throttle for runaways"), and nothing ever pauses reading, so a client that
# does not read makes the process grow without bound. At the client's EOF
# EventMachine closes the connection at once, dropping what is still queued
# (ConnectionDescriptor::Read: a readable socket that reads nothing gets
# ScheduleClose(false), i.e. close_connection, which "will silently discard
# any outbound data", em/connection.rb).
#
# As in the guide, EM.epoll is not called, so EventMachine polls with its
# default, select(2) (through Ruby's rb_thread_fd_select: pselect6).
#
# SIGTERM/SIGINT: the guide's Signal.trap(...) { EventMachine.stop }.
# Listens on $REACTORLAB_LISTEN (host:port), else ARGV[0], else
# 127.0.0.1:7070; stops by itself after $LIFETIME_S (else ARGV[1], else
# 3600) seconds.
require 'eventmachine'

class EchoServer < EM::Connection
  def receive_data(data)
    send_data(data)
  end
end

addr = ENV['REACTORLAB_LISTEN'].to_s
addr = ARGV[0] || '127.0.0.1:7070' if addr.empty?
lifetime = Float(ENV['LIFETIME_S'].to_s.empty? ? (ARGV[1] || 3600) : ENV['LIFETIME_S'])
host, _, port = addr.rpartition(':')
host = host.delete('[]')

EventMachine.run do
  Signal.trap('INT')  { EventMachine.stop }
  Signal.trap('TERM') { EventMachine.stop }

  EventMachine.start_server(host, Integer(port), EchoServer)
  EventMachine.add_timer(lifetime) { EventMachine.stop }
  $stderr.puts "no-backpressure.rb: listening on #{addr} (EventMachine #{EM::VERSION}, select, Ruby #{RUBY_VERSION})"
  $stderr.flush
end
