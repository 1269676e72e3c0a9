#!/usr/bin/env escript
%% echo.erl with {active, true} instead of {active, once}: the idiom of many
%% tutorials ("set the socket active and receive {tcp, S, Data} messages").
%% In active mode the inet_drv port driver reads the socket whenever it is
%% readable and sends every chunk to the owner's mailbox at once, whatever
%% the owner is doing: while the process is suspended in gen_tcp:send/2 (the
%% port busy: a client that does not read), the driver keeps reading that
%% client and the mailbox grows without bound. inet:setopts/2's docs say as
%% much: use active mode only if the protocol has flow control of its own or
%% little data is exchanged; {active, false}, {active, once} or {active, N}
%% provide flow control. And when the driver reads the client's FIN while
%% the send is suspended, it drops its output queue and fails the send
%% (tcp_recv_closed in inet_drv.c), so a half-closing client loses the
%% echoes still owed. Everything else is echo.erl's.
%%
%% Run: escript active-true.erl
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
                    "erlang-echo: gen_tcp {active, true} echo on ~s:~b (OTP ~s)~n",
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
    case inet:setopts(S, [{active, true}]) of
        ok -> loop(S);
        {error, _} -> gen_tcp:close(S)
    end.

loop(S) ->
    receive
        {tcp, S, Data} ->
            case gen_tcp:send(S, Data) of
                ok -> loop(S);
                {error, _} -> gen_tcp:close(S)
            end;
        {tcp_closed, S} ->
            gen_tcp:shutdown(S, write),
            gen_tcp:close(S);
        {tcp_error, S, _} ->
            gen_tcp:close(S)
    end.
