! hybrid.f90 - hybrid MPI+OpenMP program in Fortran 2008 (use mpi_f08,
! !$omp directives) with thread imbalance known by construction: the
! schedule, the waiting and the self-check of examples/hybrid.c, whose
! header explains them at length.  In short (ms after the start t0 of an
! iteration, T OpenMP threads, thread t = 0 .. T-1):
!
!   2 MPI ranks (exit status non-zero with any other number), T threads
!   each (T = OMP_NUM_THREADS, 2 when it is unset), MPI_THREAD_FUNNELED.
!   Rank 0 takes T0 = its CLOCK_MONOTONIC + 30 ms and broadcasts it;
!   iteration i (NITER = 6) starts at t0 = T0 + i * PERIOD; computing is a
!   busy-wait until a deadline of this schedule that yields the core every
!   microsecond or so (threads sharing a core take turns, every deadline is
!   met within tens of microseconds).
!     0. the master computes until t0 (serial: the other threads idle);
!     1. !$omp parallel: thread t computes until 20 + 30 t -> implicit
!        barrier; the last arrival is at R1 = 20 + 30 (T-1);
!     2. !$omp parallel: thread t computes until R1 + 10 + 25 (T-1-t),
!        !$omp barrier (last arrival B = R1 + 10 + 25 (T-1)); computes until
!        Q + 24 t, Q = B + 6, and enters !$omp critical, where the k-th to get
!        it computes until Q + 40 (k+1); all compute until
!        R2 = Q + 40 T + 10 -> implicit barrier, no waiting;
!     3. serial on the master: rank 1 computes until R2 + 30, MPI_Recv;
!        rank 0 until R2 + 75, MPI_Send (512 doubles); both until R2 + 80,
!        MPI_Barrier.  PERIOD = R2 + 85 = 76 + 95 T (266 ms for T = 2,
!        361 ms for T = 3); after the last iteration the master computes
!        until T0 + NITER * PERIOD.  A run takes 1.7 to 1.9 s (T = 2).
!
! The injected waiting, by hand (ms; per iteration, per thread for the
! run, whole run: 6 iterations x 2 ranks)
!   OpenMP implicit barrier     thread t: 30 (T-1-t); run 180 (T-1-t); total 180 T(T-1)
!   OpenMP explicit barrier     thread t: 25 t;       run 150 t;       total 150 T(T-1)
!   critical section contention thread t: 16 t (asks at Q + 24 t, the
!                               holder before it releases at Q + 40 t);
!                                                     run 96 t;        total 96 T(T-1)
!   idle threads                every worker: 85 (R2 .. PERIOD);
!                                                     run 510;         total 1020 (T-1)
!   MPI Late Sender             rank 1's master: 45 in MPI_Recv;       total 270
!   MPI_Barrier                 none
!   Totals, T = 2: 360, 300, 192, 1020, 270 ms; T = 3: 1080, 900, 576, 2040, 270 ms.
!
! Assumes OMP_WAIT_POLICY=passive (waiting threads sleep instead of
! spinning; libgomp and LLVM's libomp alike).  Build: make -C examples
! (hybrid_f.mpich, hybrid_f.openmpi).  Run:
!   OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive mpiexec.mpich -n 2 ./hybrid_f.mpich
! LLVM's OpenMP runtime: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libomp.so.5 as well.
! HYBRID_CHECK=1: rank 0 prints the lines hybrid-injected, hybrid-expected
! (waiting by the metrics' definitions from the threads' own stamps) and
! hybrid-measured (omp_get_wtime around the constructs), and a
! hybrid-location line per thread, as hybrid.c does.

program hybrid
    use, intrinsic :: iso_c_binding, only: c_int, c_long
    use mpi_f08
    use omp_lib
    implicit none

    type, bind(c) :: timespec
        integer(c_long) :: tv_sec, tv_nsec
    end type timespec

    interface
        function clock_gettime(clock, ts) bind(c, name='clock_gettime') result(rc)
            import :: c_int, timespec
            integer(c_int), value :: clock
            type(timespec), intent(out) :: ts
            integer(c_int) :: rc
        end function clock_gettime
        function sched_yield() bind(c, name='sched_yield') result(rc)
            import :: c_int
            integer(c_int) :: rc
        end function sched_yield
    end interface

    integer, parameter :: dp = kind(1.0d0)
    integer, parameter :: niter = 6, maxt = 64, msg = 512
    integer(c_int), parameter :: clock_monotonic = 1
    ! the schedule, ms (as in hybrid.c)
    real(dp), parameter :: lead = 30, r1_first = 20, r1_step = 30, eb_gap = 10, eb_step = 25, &
        cs_gap = 6, cs_ask = 24, cs_hold = 40, r2_tail = 10, serial = 30, late = 45, settle = 5, slack = 10
    ! the metrics, in waitscope's names
    integer, parameter :: ibar = 1, ebar = 2, crit = 3, idle = 4, ls = 5, mbar = 6, nmetric = 6
    character(len=*), parameter :: metric_name(nmetric) = [character(len=28) :: &
        'omp_ibarrier_wait', 'omp_ebarrier_wait', 'omp_lock_contention_critical', &
        'omp_idle_threads', 'mpi_latesender', 'mpi_barrier_wait']

    integer :: provided, rank, nranks, nthreads, it, tid, k, entered, rows, length, status, level
    integer :: order(0:maxt-1)
    logical :: check, wrong_team
    real(dp) :: tzero, t0, r1, q, r2, recv_at, period, outside, w
    real(dp) :: buf(msg), arrive(0:maxt-1), arrive_eb(0:maxt-1), ask(0:maxt-1), release(0:maxt-1)
    ! per thread, seconds: waiting by the metrics' definitions, time in the construct
    real(dp) :: expected(0:maxt-1, nmetric), measured(0:maxt-1, nmetric)
    ! the masters' CLOCK_MONOTONIC stamps (ms) entering MPI_Send / MPI_Recv and MPI_Barrier
    real(dp) :: p2p_enter(niter), barrier_enter(niter)
    real(dp), allocatable :: mine(:), everyone(:, :)
    character(len=16) :: value

    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks)
    nthreads = 2
    call get_environment_variable('OMP_NUM_THREADS', length=length, status=status)
    if (status == 0 .and. length > 0) nthreads = omp_get_max_threads()
    call get_environment_variable('HYBRID_CHECK', value, status=status)
    level = 0
    if (status == 0) read (value, *, iostat=status) level
    check = status == 0 .and. level > 0
    if (nranks /= 2 .or. provided < MPI_THREAD_FUNNELED .or. nthreads < 1 .or. nthreads > maxt) then
        if (rank == 0) write (0, '(a, i0, a, i0, a, i0, a)') 'hybrid_f: needs 2 MPI ranks (has ', nranks, &
            '), MPI_THREAD_FUNNELED and 1 to ', maxt, ' OpenMP threads (has ', nthreads, ')'
        call MPI_Abort(MPI_COMM_WORLD, 2)
    end if

    r1 = r1_first + r1_step * (nthreads - 1)
    q = r1 + eb_gap + eb_step * (nthreads - 1) + cs_gap
    r2 = q + cs_hold * nthreads + r2_tail
    recv_at = r2 + serial
    period = recv_at + late + slack

    expected = 0
    measured = 0
    buf = 0
    wrong_team = .false.
    call MPI_Barrier(MPI_COMM_WORLD)
    tzero = now_ms() + lead
    call MPI_Bcast(tzero, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)

    outside = 0
    do it = 0, niter - 1
        t0 = tzero + it * period

        ! 0. serial: the master computes until the iteration starts
        call compute_until(t0)
        if (check .and. it > 0) measured(0, idle) = measured(0, idle) + omp_get_wtime() - outside

        ! 1. imbalance: thread t waits r1_step (T-1-t) in the implicit barrier
        !$omp parallel num_threads(nthreads) default(shared) private(tid)
        tid = omp_get_thread_num()
        if (tid == 0) then
            if (omp_get_num_threads() /= nthreads) wrong_team = .true.
        end if
        call compute_until(t0 + r1_first + r1_step * tid)
        if (check) arrive(tid) = omp_get_wtime()
        !$omp end parallel
        if (wrong_team) call MPI_Abort(MPI_COMM_WORLD, 3)
        if (check) then
            outside = omp_get_wtime()
            call barrier_waits(arrive, expected(:, ibar))
            measured(0:nthreads-1, ibar) = measured(0:nthreads-1, ibar) + outside - arrive(0:nthreads-1)
            measured(0, idle) = measured(0, idle) + omp_get_wtime() - outside
        end if

        ! 2. explicit barrier, critical section, balanced end
        entered = 0
        !$omp parallel num_threads(nthreads) default(shared) private(tid, k, w)
        tid = omp_get_thread_num()
        call compute_until(t0 + r1 + eb_gap + eb_step * (nthreads - 1 - tid))
        w = omp_get_wtime()
        arrive_eb(tid) = w
        !$omp barrier
        if (check) measured(tid, ebar) = measured(tid, ebar) + omp_get_wtime() - w

        call compute_until(t0 + q + cs_ask * tid)
        w = omp_get_wtime()
        ask(tid) = w
        !$omp critical
        k = entered
        entered = entered + 1
        order(tid) = k
        if (check) measured(tid, crit) = measured(tid, crit) + omp_get_wtime() - w
        call compute_until(t0 + q + cs_hold * (k + 1))
        release(k) = omp_get_wtime()
        !$omp end critical

        call compute_until(t0 + r2)
        if (check) arrive(tid) = omp_get_wtime()
        !$omp end parallel
        if (check) then
            outside = omp_get_wtime()
            call barrier_waits(arrive_eb, expected(:, ebar))
            call barrier_waits(arrive, expected(:, ibar))
            measured(0:nthreads-1, ibar) = measured(0:nthreads-1, ibar) + outside - arrive(0:nthreads-1)
            do tid = 0, nthreads - 1
                if (order(tid) > 0) then
                    if (release(order(tid) - 1) > ask(tid)) &
                        expected(tid, crit) = expected(tid, crit) + release(order(tid) - 1) - ask(tid)
                end if
            end do
        end if

        ! 3. serial work on the master, Late Sender, barrier
        if (rank == 0) then
            call compute_until(t0 + recv_at + late)
            buf(1) = it
            p2p_enter(it + 1) = now_ms()
            call MPI_Send(buf, msg, MPI_DOUBLE_PRECISION, 1, it, MPI_COMM_WORLD)
        else
            call compute_until(t0 + recv_at)
            w = omp_get_wtime()
            p2p_enter(it + 1) = now_ms()
            call MPI_Recv(buf, msg, MPI_DOUBLE_PRECISION, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
            measured(0, ls) = measured(0, ls) + omp_get_wtime() - w
        end if
        call compute_until(t0 + recv_at + late + settle)
        w = omp_get_wtime()
        barrier_enter(it + 1) = now_ms()
        call MPI_Barrier(MPI_COMM_WORLD)
        measured(0, mbar) = measured(0, mbar) + omp_get_wtime() - w
    end do

    call compute_until(tzero + niter * period)   ! the last iteration's end, as the others'
    if (check) then
        measured(0, idle) = measured(0, idle) + omp_get_wtime() - outside
        measured(1:nthreads-1, idle) = measured(0, idle)    ! the workers idle while the master runs alone
        expected(1:nthreads-1, idle) = measured(0, idle)
        measured(0, idle) = 0
        rows = 2 * nmetric * nthreads + 2 * niter
        allocate (mine(rows), everyone(rows, 0:1))
        mine = [reshape(expected(0:nthreads-1, :), [nmetric * nthreads]), &
                reshape(measured(0:nthreads-1, :), [nmetric * nthreads]), p2p_enter, barrier_enter]
        call MPI_Gather(mine, rows, MPI_DOUBLE_PRECISION, everyone, rows, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
        if (rank == 0) call print_check(everyone)
    else if (rank == 0) then
        write (*, '(a, i0, a, i0, a, i0, a)') 'hybrid_f: 2 ranks x ', nthreads, ' OpenMP threads, ', niter, &
            ' iterations of ', nint(period), ' ms'
    end if
    call MPI_Finalize()

contains

    real(dp) function now_ms()
        type(timespec) :: ts
        integer(c_int) :: rc
        rc = clock_gettime(clock_monotonic, ts)
        now_ms = real(ts%tv_sec, dp) * 1d3 + real(ts%tv_nsec, dp) * 1d-6
    end function now_ms

    ! Computation: busy until the clock reaches deadline (ms), giving the core
    ! to any other runnable thread after every microsecond or so.
    subroutine compute_until(deadline)
        real(dp), intent(in) :: deadline
        real(dp), volatile :: x
        integer :: i
        integer(c_int) :: rc
        x = 1
        do while (now_ms() < deadline)
            do i = 1, 50
                x = x * 0.999_dp + 1
            end do
            rc = sched_yield()
        end do
    end subroutine compute_until

    ! Waiting at a barrier: the last arrival less each thread's own.
    subroutine barrier_waits(arrival, waits)
        real(dp), intent(in) :: arrival(0:)
        real(dp), intent(inout) :: waits(0:)
        waits(0:nthreads-1) = waits(0:nthreads-1) + maxval(arrival(0:nthreads-1)) - arrival(0:nthreads-1)
    end subroutine barrier_waits

    ! The waiting the program injects, by hand (header), seconds.
    real(dp) function injected(metric, r, t)
        integer, intent(in) :: metric, r, t
        real(dp) :: ms(nmetric)
        ms = [r1_step * (nthreads - 1 - t), eb_step * t, (cs_hold - cs_ask) * t, 0.0_dp, 0.0_dp, 0.0_dp]
        if (t > 0) ms(idle) = serial + late + slack
        if (r == 1 .and. t == 0) ms(ls) = late
        injected = ms(metric) * niter * 1d-3
    end function injected

    function fmt(x) result(text)
        real(dp), intent(in) :: x
        character(len=24) :: text
        write (text, '(f24.6)') x
        text = adjustl(text)
    end function fmt

    ! Rank 0: the figures of both ranks (a column each: expected, measured,
    ! p2p_enter, barrier_enter), printed as hybrid.c does.
    subroutine print_check(figures)
        real(dp), intent(in) :: figures(:, 0:)
        real(dp) :: total(nmetric, 3), v(3), p2p(nmetric)
        integer :: r, t, m, i, j, stamps
        character(len=8), parameter :: label(3) = [character(len=8) :: 'injected', 'expected', 'measured']

        total = 0
        stamps = 2 * nmetric * nthreads
        write (*, '(a, i0, a, i0, a)') 'hybrid-check ranks=2 threads=', nthreads, ' iterations=', niter, &
            ' values=injected/expected/measured'
        do r = 0, 1
            p2p = 0
            do i = 1, niter   ! MPI waiting by Scalasca's definitions
                if (r == 1 .and. figures(stamps + i, 0) > figures(stamps + i, 1)) &
                    p2p(ls) = p2p(ls) + (figures(stamps + i, 0) - figures(stamps + i, 1)) * 1d-3
                j = stamps + niter + i
                if (figures(j, 1 - r) > figures(j, r)) &
                    p2p(mbar) = p2p(mbar) + (figures(j, 1 - r) - figures(j, r)) * 1d-3
            end do
            do t = 0, nthreads - 1
                write (*, '(a, i0, a, i0)', advance='no') 'hybrid-location rank=', r, ' thread=', t
                do m = 1, nmetric
                    v = [injected(m, r, t), figures((m - 1) * nthreads + t + 1, r), &
                         figures((nmetric + m - 1) * nthreads + t + 1, r)]
                    if (m == ls .or. m == mbar) then
                        v(2) = 0
                        if (t == 0) v(2) = p2p(m)
                    end if
                    write (*, '(7a)', advance='no') ' ', trim(metric_name(m)), '=', trim(fmt(v(1))), '/', &
                        trim(fmt(v(2))), '/' // trim(fmt(v(3)))
                    total(m, :) = total(m, :) + v
                end do
                write (*, '(a)') ''
            end do
        end do
        do i = 1, 3
            write (*, '(2a)', advance='no') 'hybrid-', trim(label(i))
            do m = 1, nmetric
                write (*, '(4a)', advance='no') ' ', trim(metric_name(m)), '=', trim(fmt(total(m, i)))
            end do
            write (*, '(a)') ''
        end do
    end subroutine print_check

end program hybrid
