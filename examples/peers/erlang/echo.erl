#!/usr/bin/env escript
%% Byte echo on Erlang/OTP gen_tcp (the inet_drv port driver), in the idiom
%% of the OTP docs and "Learn You Some Erlang": one acceptor process loops in
%% gen_tcp:accept/1, spawns a process for each connection and hands it the
%% socket with gen_tcp:controlling_process/2; that process echoes with
%% {active, once}:
%%
%%   * it receives one {tcp, S, Data} message, gen_tcp:send/2s it back and
%%     only then asks for the next one (inet:setopts(S, [{active, once}])).
%%     gen_tcp:send/2 suspends the process while the port is busy (its
%%     driver queue above high_watermark, 8 KiB by default), so a client
%%     that does not read stops this process, and with it the reading of
%%     that socket: the driver reads a socket in active-once mode only while
%%     a message is asked for (backpressure; at most the driver queue and
%%     one message held per connection);
%%   * {exit_on_close, false}: when the peer shuts down its side the port
%%     stays open for writing ({tcp_closed, S} is delivered, the port is not
%%     closed with its queue), and the process calls gen_tcp:shutdown(S,
%%     write), which inet_drv defers until its queue is empty
%%     (TCP_ADDF_PENDING_SHUT_WR), then gen_tcp:close/1, which waits for
%%     the queue to drain as long as it makes progress (prim_inet:close,
%%     close_pend_loop): every echo, then FIN. (Were the FIN read while a
%%     send is suspended on the busy port, inet_drv would drop its queue and
%%     fail the send, tcp_recv_closed; with {active, once} the FIN is only
%%     read once the process asks for a message, after its send returned.);
%%   * a reset ({tcp_closed, S}, or a failed send) closes the socket, and
%%     the process ends;
%%   * the acceptor backs off 100 ms when accept fails for want of
%%     descriptors (emfile, enfile) instead of retrying at once.
%%
%% Listens on $REACTORLAB_LISTEN (host:port), else the first argument, else
%% 127.0.0.1:7070; prints one line to stderr once listening; exits 0 on
%% SIGTERM (the runtime's default handler calls init:stop/0) or after
%% $LIFETIME_S seconds (default 3600).
%%
%% Run: escript echo.erl   (erlang-nox / erlang-base; no build step)
-mode(compile).

main(Args) ->
    {Host, Port} = address(Args),
    {ok, IP} = inet:parse_address(Host),
    %% The lifetime first, and with a plain receive timeout rather than the
    %% timer server: a SIGTERM as soon as the port listens starts init:stop,
    %% which may already be shutting that server down.
    Lifetime = list_to_integer(os:getenv("LIFETIME_S", "3600")),
    spawn(fun() -> receive after Lifetime * 1000 -> erlang:halt(0) end end),
    {ok, L} = gen_tcp:listen(Port, [binary, {packet, raw}, {ip, IP},
                                    {active, false}, {reuseaddr, true},
                                    {backlog, 1024}, {nodelay, true},
                                    {exit_on_close, false}]),
    catch io:format(standard_error,
                    "erlang-echo: gen_tcp {active, once} echo on ~s:~b (OTP ~s)~n",
                    [Host, Port, erlang:system_info(otp_release)]),
    accept(L).

address(Args) ->
    Addr = case {os:getenv("REACTORLAB_LISTEN"), Args} of
               {false, [A | _]} -> A;
               {false, []} -> "127.0.0.1:7070";
               {A, _} -> A
           end,
    {Host, [$: | Port]} = lists:splitwith(fun(C) -> C =/= $: end,
                                          string:reverse(Addr)),
    {string:trim(string:reverse(Port), both, "[]"),
     list_to_integer(string:reverse(Host))}.

accept(L) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            Pid = spawn(fun() -> receive {go, S} -> serve(S) end end),
            case gen_tcp:controlling_process(S, Pid) of
                ok -> Pid ! {go, S};
                {error, _} -> exit(Pid, kill), gen_tcp:close(S)
            end,
            accept(L);
        {error, E} when E =:= emfile; E =:= enfile; E =:= enobufs;
                        E =:= enomem ->
            %% Out of descriptors: back off, then retry. A plain receive
            %% timeout, not timer:sleep/1: loading a module not loaded yet
            %% needs a descriptor too (the code server opens its .beam).
            receive after 100 -> ok end,
            accept(L);
        {error, closed} ->
            ok;
        {error, _} ->  % econnaborted and the like: the next one
            accept(L)
    end.

serve(S) ->
    case inet:setopts(S, [{active, once}]) of
        ok ->
            receive
                {tcp, S, Data} ->
                    case gen_tcp:send(S, Data) of
                        ok -> serve(S);
                        {error, _} -> gen_tcp:close(S)
                    end;
                {tcp_closed, S} ->
                    %% EOF (or a reset, which inet_drv reports as closed):
                    %% FIN once the queued echoes are written, then close.
                    gen_tcp:shutdown(S, write),
                    gen_tcp:close(S);
                {tcp_error, S, _} ->
                    gen_tcp:close(S)
            end;
        {error, _} ->
            gen_tcp:close(S)
    end.
