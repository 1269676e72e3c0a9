# Byte echo on EventMachine, in the getting started guide's idiom
# (EM::Connection#receive_data calls send_data), on epoll (EM.epoll), with
# backpressure.
#
# Backpressure: EventMachine has no "drained" callback. What it gives is
# Connection#get_outbound_data_size (bytes queued by send_data, not yet
# written) and Connection#pause / #resume. Above HIGH bytes queued the
# connection is paused. But pause stops writing as well as reading
# ("send_data and receive_data events are not fired until resume is called",
# em/connection.rb; ConnectionDescriptor::SelectForWrite returns false while
# bPaused, ext/ed.cpp), so the queue cannot drain while paused and its size
# cannot tell when to resume. A periodic timer (every 5 ms while paused)
# asks the kernel instead: once the socket is writable (select(2) on its
# descriptor, EM.get_file_descriptor) the connection is resumed; EventMachine
# then writes (writev of up to 16 pages) and reads (up to 10 x 16 KiB,
# stopping at once if receive_data pauses again). So a client that does not
# read is not read either: memory stays at about HIGH plus one read.
#
# EOF: EventMachine has no half-close. A readable socket from which read()
# brings nothing is closed at once (ConnectionDescriptor::Read: total_bytes_read
# == 0 -> ScheduleClose(false)), which discards what is queued; unbind comes
# after, too late for close_connection_after_writing. So the echoes queued in
# EventMachine when it reads a client's FIN are lost: a limit of the library
# this server cannot work around with EventMachine's API.
#
# SIGTERM/SIGINT: the guide's Signal.trap(...) { EventMachine.stop }; the
# reactor then closes every connection (unbind) and EM.run returns.
# Listens on $REACTORLAB_LISTEN (host:port), else ARGV[0], else
# 127.0.0.1:7070; stops by itself after $LIFETIME_S (else ARGV[1], else
# 3600) seconds.
require 'eventmachine'

class Echo < EM::Connection
  HIGH = 256 * 1024 # bytes queued above which the connection is paused
  CHECK_S = 0.005   # while paused: how often to ask whether the socket is writable

  def receive_data(data)
    send_data(data)
    hold if get_outbound_data_size > HIGH && !paused?
  end

  def unbind
    @check&.cancel
    @check = nil
  end

  private

  def hold
    pause
    @check ||= EM.add_periodic_timer(CHECK_S) { resume_if_writable }
  end

  def resume_if_writable
    return unless writable?
    @check.cancel
    @check = nil
    resume
  end

  def writable?
    io = IO.for_fd(EM.get_file_descriptor(@signature), autoclose: false)
    !IO.select(nil, [io], nil, 0).nil?
  rescue SystemCallError, IOError, EM::ConnectionNotBound, RuntimeError
    true # let EventMachine find the error
  end
end

addr = ENV['REACTORLAB_LISTEN'].to_s
addr = ARGV[0] || '127.0.0.1:7070' if addr.empty?
lifetime = Float(ENV['LIFETIME_S'].to_s.empty? ? (ARGV[1] || 3600) : ENV['LIFETIME_S'])
host, _, port = addr.rpartition(':')
host = host.delete('[]')

# EventMachine's default on Linux is select(2) (EM.epoll? only says epoll is
# available); EM.epoll before EM.run switches to epoll, as EventMachine's
# EPOLL notes and servers built on it (thin, ...) do.
EventMachine.epoll

EventMachine.run do
  Signal.trap('INT')  { EventMachine.stop }
  Signal.trap('TERM') { EventMachine.stop }

  EventMachine.start_server(host, Integer(port), Echo)
  EventMachine.add_timer(lifetime) { EventMachine.stop }
  $stderr.puts "echo.rb: listening on #{addr} (EventMachine #{EM::VERSION}, epoll, Ruby #{RUBY_VERSION})"
  $stderr.flush
end
